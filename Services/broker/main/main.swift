import BrokerCore
import ServiceKit

// broker: binds BUS_RPC_BIND / BUS_PUB_BIND / BUS_SUB_BIND and routes until SIGTERM or SIGINT.
await ServiceRunner.run(BrokerService.self)
