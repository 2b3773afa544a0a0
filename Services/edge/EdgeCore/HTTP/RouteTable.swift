import Wire

/// The methods apps may call through the edge: those whose contract says audience `.app`,
/// by service and name. Everything else — reserved methods, `.service` and `.operator`
/// methods — is not in the table, so the edge answers 404 as for a method that does not exist.
struct RouteTable: Sendable {
    private let methods: [String: [String: any MethodDescriptor]]

    init(contracts: [any ServiceContract]) {
        var methods: [String: [String: any MethodDescriptor]] = [:]
        for contract in contracts {
            for method in contract.methods where method.audience == .app {
                methods[method.service, default: [:]][method.name] = method
            }
        }
        self.methods = methods
    }

    /// The app-facing method `name` of `service`, if there is one.
    func method(service: Substring, name: Substring) -> (any MethodDescriptor)? {
        methods[String(service)]?[String(name)]
    }

    /// The services with at least one app-facing method, sorted.
    var services: [String] { methods.keys.sorted() }

    /// Every app-facing method, by service then name.
    var all: [any MethodDescriptor] {
        services.flatMap { service in methods[service]!.keys.sorted().map { methods[service]![$0]! } }
    }
}
