import ConnectorsCore
import ServiceKit

// connectors: users' Google accounts, synced incrementally into store and ingest.
await ServiceRunner.run(ConnectorsService.self)
