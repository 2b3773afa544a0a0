import Wire

// The contracts module is the project's `.proto`: every service declares its methods and events
// once, typed, in a file of its own here (`Store.swift`, `Scheduler.swift`, …) as a
// `ServiceContract` with `Method` and `Topic` properties, plus a global constant callers use:
//
//     public let Store = StoreContract()
//     public struct StoreContract: ServiceContract {
//         public static let serviceName = "store"
//         public let getMaterial = Method<MaterialID, Material>(Self.self, "materials.get", "Fetch one material by id.", audience: .app)
//         public let materialCreated = Topic<Material>(Self.self, "material.created", "A material was created.")
//     }
//
// Every method says who may call it (`audience`: app, service or operator; docs/services/*.md
// list them), which its service's host enforces. The service registers its handlers against
// these descriptors, callers pass them to `bus.call`, `_describe` is generated from them, and
// busctl reads them from the catalog below.

/// Every service contract, for tools that work without the services running (busctl).
public enum Catalog {
    /// The contracts of all StudyBus services.
    public static let contracts: [any ServiceContract] = [
        AIGateway,
        Connectors,
        Ingest,
        Notifier,
        Scheduler,
        Store,
        TimerTicker,
    ]

    /// The contract of `service`, if it is one of ours.
    public static func contract(named service: String) -> (any ServiceContract)? {
        contracts.first { type(of: $0).serviceName == service }
    }
}
