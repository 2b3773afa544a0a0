import BrokerCore
import Bus
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import Wire

// broker: binds BUS_RPC_BIND / BUS_PUB_BIND / BUS_SUB_BIND and routes until SIGTERM or SIGINT.

if CommandLine.arguments.contains("--help") || CommandLine.arguments.contains("-h") {
    print("""
    USAGE: broker

    The StudyBus broker: 7/MDP request routing, the XSUB/XPUB event proxy, bus.rpc call traces.
    Configured by environment variables:
      BUS_RPC_BIND            ROUTER for requests and workers   (default tcp://*:5555)
      BUS_PUB_BIND            XSUB publishers connect to        (default tcp://*:5556)
      BUS_SUB_BIND            XPUB subscribers connect to       (default tcp://*:5557)
      BUS_HEARTBEAT_MS        worker heartbeat interval         (default 2500)
      BUS_HEARTBEAT_LIVENESS  heartbeats missed before removal  (default 3)
      BROKER_MAX_QUEUE        requests waiting per service      (default 10000)
      BROKER_MAX_MESSAGE_BYTES largest frame accepted           (default 67108864)
      BUS_HWM                 messages queued per peer          (default 100000)
      LOG_LEVEL, LOG_FORMAT   info|debug|…, text|json
    """)
    exit(0)
}

/// Runs the broker thread for the life of the service group.
struct BrokerService: Service {
    let broker: Broker

    func run() async throws {
        _ = try await broker.start()
        try? await gracefulShutdown()
        await broker.stop()
    }
}

let environment = ServiceKit.Environment()
let logger = ServiceRunner.bootstrapLogging(label: "broker", environment: environment)
do {
    let broker = try Broker(configuration: .fromEnvironment(environment.values), logger: logger)
    try await ServiceRunner.runGroup([BrokerService(broker: broker)], logger: logger)
} catch {
    logger.critical("broker stopped on error", metadata: ["error": "\(error)"])
    exit(1)
}
