import ArgumentParser
import Bus
import Contracts
import Foundation
import Wire

extension BusCtl {
    struct Services: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List services with their workers, credit, requests in flight and queued, and totals.",
            discussion: """
            Then each worker: its credit and requests in flight, the build it runs and its health, as it last answered \
            the broker's _health (wire protocol, Addition 19; '?' until it has).
            """)

        @Flag(help: "Print the broker's JSON.") var json = false
        @Option(help: "Seconds to wait for the broker.") var timeout: Double = 5
        @OptionGroup var endpoints: EndpointOptions

        func run() async throws {
            let statuses = try await withBus(endpoints, json: json) { bus in
                try await bus.call(BrokerProtocol.services, Empty(), options: CallOptions(timeout: .milliseconds(Int64(timeout * 1000))))
            }
            if json {
                Output.line(Output.printableJSON(String(decoding: try WireCoding.encode(statuses), as: UTF8.self)))
                return
            }
            Output.line(Self.render(statuses))
            if statuses.isEmpty { Output.warning("no service has registered with the broker yet") }
        }

        /// A table of the services, then one of their workers (when the broker lists them).
        static func render(_ statuses: [ServiceStatus]) -> String {
            let services = [["SERVICE", "WORKERS", "CREDIT", "IN FLIGHT", "QUEUED", "REQUESTS", "VERSIONS"]] + statuses.map {
                [$0.name, "\($0.workers)", "\($0.credit)", "\($0.inFlight)", "\($0.queued)", "\($0.requests)", versions($0)]
            }
            var text = Table.render(services.map { $0.map(Output.printable) })
            let workers = statuses.flatMap { service in
                (service.instances ?? []).map { worker in
                    [service.name, worker.id, "\(worker.credit)", "\(worker.inFlight)", worker.build?.version ?? "?", worker.build?.commit ?? "?",
                     worker.health ?? "?", ISO8601.format(worker.since)]
                }
            }
            if !workers.isEmpty {
                let header = ["SERVICE", "WORKER", "CREDIT", "IN FLIGHT", "VERSION", "COMMIT", "HEALTH", "SINCE"]
                text += "\n\n" + Table.render(([header] + workers).map { $0.map(Output.printable) })
            }
            return text
        }

        /// The versions a service's workers run: one, or several while an upgrade rolls; `?` for
        /// a worker that has not said, `-` without workers or from a broker that does not list them.
        static func versions(_ status: ServiceStatus) -> String {
            guard let instances = status.instances, !instances.isEmpty else { return "-" }
            return Set(instances.map { $0.build?.version ?? "?" }).sorted().joined(separator: ", ")
        }
    }

    struct Health: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check that a service (or the broker and every service) is serving.",
            discussion: "Exit status 0 when everything asked about is SERVING, 1 when something is NOT_SERVING, the status code when a call fails.")

        @Argument(help: "The service; default: the broker and every registered service.") var service: String?
        @Option(help: "Seconds to wait for each answer.") var timeout: Double = 3
        @Flag(help: "Print one JSON array of {service, status, build}.") var json = false
        @OptionGroup var endpoints: EndpointOptions

        func run() async throws {
            let options = CallOptions(timeout: .milliseconds(Int64(timeout * 1000)))
            let answers = try await withBus(endpoints, json: json) { bus in
                var names = [service ?? BrokerProtocol.serviceName]
                if service == nil { names += try await bus.call(BrokerProtocol.services, Empty(), options: options).filter { $0.workers > 0 }.map(\.name) }
                var answers: [(String, HealthStatus)] = []
                for name in names { answers.append((name, try await bus.call(Reserved.health(name), Empty(), options: options))) }
                return answers
            }
            if json {
                let list = try answers.map { name, health in
                    JSONValue.object(["service": .string(name)].merging(try JSONValue.parse(WireCoding.encode(health)).objectValue ?? [:]) { $1 })
                }
                Output.line(Output.printableJSON(JSONValue.array(list).jsonText))
            } else {
                for (name, health) in answers { Output.line("\(name) \(health.status.rawValue)" + (health.build.map { " \($0)" } ?? "")) }
            }
            let allServing = answers.allSatisfy { $0.1.status == .serving }
            if !allServing { throw ExitCode(1) }
        }
    }

    struct Describe: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a service's methods and events with their JSON shapes.",
            discussion: "Asks the running service (_describe); if it is not running, shows its declared contract.")

        @Argument(help: "The service, e.g. store.") var service: String
        @Flag(help: "Print the description as JSON.") var json = false
        @OptionGroup var endpoints: EndpointOptions

        func run() async throws {
            let description: ServiceDescription
            do {
                description = try await withBus(endpoints, json: json) { bus in
                    try await bus.call(Reserved.describe(service), Empty(), options: CallOptions(timeout: .seconds(5)))
                }
            } catch let exit as ExitCode where exit.rawValue == Int32(StatusCode.unavailable.rawValue) || exit.rawValue == Int32(StatusCode.deadlineExceeded.rawValue) {
                guard let contract = Catalog.contract(named: service) else { throw exit }
                Output.warning("\(service) is not running; showing its declared contract")
                description = ServiceDescription(service: service, methods: contract.methods, topics: contract.topics)
            }
            if json {
                Output.line((try JSONValue.parse(try WireCoding.encode(description))).prettyJSONText)
                return
            }
            Output.line(Output.bold(description.service) + " — \(description.methods.count) methods, \(description.events.count) events"
                        + (description.build.map { ", \($0)" } ?? ""))
            for method in description.methods {
                Output.line("\n  \(Output.bold(method.name))  \(method.summary)")
                if let audience = method.audience { Output.line("    audience: \(audience.rawValue) (\(audience.callers))") }
                Output.line("    request:  \(method.request.jsonText)")
                Output.line("    response: \(method.response.jsonText)")
            }
            if !description.events.isEmpty { Output.line("\nevents") }
            for event in description.events {
                Output.line("\n  \(Output.bold(event.topic))  \(event.summary)")
                Output.line("    payload: \(event.payload.jsonText)")
            }
        }
    }
}

/// Left-aligned columns separated by two spaces.
enum Table {
    static func render(_ rows: [[String]]) -> String {
        guard let first = rows.first else { return "" }
        let widths = (0..<first.count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
