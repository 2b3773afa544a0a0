// swift-tools-version: 6.2
import Foundation
import PackageDescription

let package = Package(
    name: "StudyBus",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "broker", targets: ["broker"]),
        .executable(name: "busctl", targets: ["busctl"]),
        .executable(name: "timer-ticker", targets: ["timer-ticker"]),
        .executable(name: "scheduler", targets: ["scheduler"]),
        .executable(name: "ai-gateway", targets: ["ai-gateway"]),
        .executable(name: "store", targets: ["store"]),
        .executable(name: "notifier", targets: ["notifier"]),
        .executable(name: "ingest", targets: ["ingest"]),
        .executable(name: "edge", targets: ["edge"]),
        .executable(name: "connectors", targets: ["connectors"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        // jwt-kit 5.7 needs swift-crypto 4.1 or later.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/weichsel/ZIPFoundation.git", from: "0.9.20"),
        // Metrics (the API every module records through) and their Prometheus exposition, served
        // with SwiftNIO's HTTP/1 on each process's monitoring port.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        // Traces: spans through the swift-distributed-tracing API (all that the bus, storage and
        // services link), exported over OTLP by swift-otel only when an endpoint is set
        // (docs/operations.md, "Tracing"). swift-otel's traits choose its exporters: OTLPHTTP
        // alone (HTTP/1.1 with protobuf or JSON bodies, through async-http-client, on the
        // SwiftNIO and swift-nio-ssl we build anyway). Its default adds OTLPGRPC, which would
        // build grpc-swift-2, its NIO HTTP/2 transport and their protobuf glue as well: minutes
        // of every clean build for a second wire format that collectors, Jaeger and Tempo all
        // accept over HTTP too.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // C libraries, each wrapped by exactly one Swift module.
        .systemLibrary(name: "CZMQ", path: "Shared/CZMQ"),
        .systemLibrary(name: "CMalloc", path: "Shared/CMalloc"),
        .systemLibrary(name: "CCurl", path: "Shared/CCurl"),
        // ai-gateway's offline speech: espeak-ng synthesises, pocketsphinx recognises (linked,
        // not run per request; Debian libespeak-ng-dev, libpocketsphinx-dev).
        .systemLibrary(name: "CEspeakNG", path: "Services/ai-gateway/CEspeakNG", pkgConfig: "espeak-ng", providers: [.apt(["libespeak-ng-dev"])]),
        .systemLibrary(
            name: "CPocketSphinx", path: "Services/ai-gateway/CPocketSphinx", pkgConfig: "pocketsphinx", providers: [.apt(["libpocketsphinx-dev"])]),
        // store's PDF export: cairo draws the pages, pango lays out text of any script (Debian
        // libcairo2-dev, libpango1.0-dev); PangoPDF is its Swift wrapper.
        .systemLibrary(
            name: "CPangoCairo", path: "Services/store/CPangoCairo", pkgConfig: "pangocairo", providers: [.apt(["libcairo2-dev", "libpango1.0-dev"])]),

        // Shared libraries. Wire is the protocol without a transport (status codes, headers,
        // descriptors, the payload codec); Bus is the ZeroMQ transport, client, host and events.
        .target(name: "Wire", path: "Shared/Wire"),
        // Spans for calls, requests and events, parented by the W3C traceparent Wire carries;
        // the swift-distributed-tracing API only, no exporter (ServiceKit bootstraps one).
        .target(
            name: "Traces",
            dependencies: ["Wire", .product(name: "Tracing", package: "swift-distributed-tracing")],
            path: "Shared/Traces"
        ),
        // Threads of our own, named for `top -H`, and blocking work kept off the cooperative pool.
        .target(name: "CThreads", path: "Shared/CThreads"),
        .target(name: "Threads", dependencies: ["CThreads"], path: "Shared/Threads"),
        .target(name: "ZMQ", dependencies: ["CZMQ"], path: "Shared/ZMQ"),
        // External programs as subprocesses with time and resource limits (fork, setrlimit,
        // execve: posix_spawn cannot): ingest's extraction tools, ai-gateway's ffmpeg.
        .target(name: "CToolSpawn", path: "Shared/CToolSpawn"),
        .target(name: "ToolProcess", dependencies: ["CToolSpawn", "Threads"], path: "Shared/ToolProcess"),
        // One entry of a zip from outside, inflated from its own bytes only (ingest, store).
        .target(name: "ZipEntries", dependencies: [.product(name: "ZIPFoundation", package: "ZIPFoundation")], path: "Shared/ZipEntries"),
        // The git commit stamped at build (BuildInfo in Bus).
        .target(name: "CBuildInfo", path: "Shared/CBuildInfo"),
        .target(
            name: "Bus",
            dependencies: [
                "CBuildInfo", "Threads", "Traces", "Wire", "ZMQ",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            path: "Shared/Bus"
        ),
        .target(name: "Contracts", dependencies: ["Wire"], path: "Shared/Contracts"),
        .target(
            name: "ServiceKit",
            dependencies: [
                "Bus", "CMalloc", "Storage", "Threads", "Traces", "Wire",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Shared/ServiceKit"
        ),

        .target(
            name: "Storage",
            dependencies: [
                "Threads", "Traces", "Wire",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the memory SQLite holds and its limit (SQLiteMemory).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            path: "Shared/Storage"
        ),
        // Multi-device sync shared by the services that sync records (store, scheduler):
        // last-write-wins versions, tombstones, the change log and cursor pulls.
        .target(
            name: "SyncKit",
            dependencies: ["Contracts", "Storage", "Wire", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Shared/SyncKit"
        ),

        .target(
            name: "HTTPClient",
            dependencies: [
                "CCurl", "Threads", "Wire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Shared/HTTPClient"
        ),

        // broker: a library with the routing logic and a thin main.
        .target(
            name: "BrokerCore",
            dependencies: [
                "Bus", "Contracts", "ServiceKit", "Threads", "Wire", "ZMQ",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Services/broker/BrokerCore"
        ),
        .executableTarget(
            name: "broker",
            dependencies: ["BrokerCore", "ServiceKit"],
            path: "Services/broker/main"
        ),

        // busctl: the operator's tool.
        .target(
            name: "BusCtlCore",
            dependencies: [
                "Bus", "Threads", "Wire", "Contracts", "EdgeCore", "ServiceKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Services/busctl/BusCtlCore"
        ),
        .executableTarget(name: "busctl", dependencies: ["BusCtlCore"], path: "Services/busctl/main"),


        // MARK: timer-ticker
        .target(
            name: "TimerTickerCore",
            dependencies: [
                "Bus", "Threads", "Wire", "Contracts", "Storage", "ServiceKit",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Services/timer-ticker/TimerTickerCore"
        ),
        .executableTarget(name: "timer-ticker", dependencies: ["TimerTickerCore", "ServiceKit"], path: "Services/timer-ticker/main"),

        // MARK: ai-gateway
        .target(
            name: "AIGatewayCore",
            dependencies: [
                "Bus", "CEspeakNG", "CPocketSphinx", "Threads", "ToolProcess", "Wire", "Contracts", "Storage", "ServiceKit", "HTTPClient",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Services/ai-gateway/AIGatewayCore"
        ),
        .executableTarget(name: "ai-gateway", dependencies: ["AIGatewayCore", "ServiceKit"], path: "Services/ai-gateway/main"),

        // MARK: scheduler
        .target(
            name: "SchedulerCore",
            dependencies: [
                "Bus", "Threads", "Wire", "Contracts", "Storage", "ServiceKit", "SyncKit",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Services/scheduler/SchedulerCore"
        ),
        .executableTarget(name: "scheduler", dependencies: ["SchedulerCore", "ServiceKit"], path: "Services/scheduler/main"),

        // MARK: store
        // store: the system of record for study content (SQLite + FTS5), a library and a thin main.
        .target(
            name: "StoreCore",
            dependencies: [
                "Bus", "Threads", "Wire", "Contracts", "Storage", "ServiceKit", "SyncKit", "PangoPDF",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for search's FTS5 snippet function.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // Anki packages (.apkg) are zips.
                "ZipEntries", .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            path: "Services/store/StoreCore"
        ),
        .target(name: "PangoPDF", dependencies: ["CPangoCairo"], path: "Services/store/PangoPDF"),
        .executableTarget(name: "store", dependencies: ["StoreCore", "ServiceKit"], path: "Services/store/main"),

        // MARK: notifier
        .target(
            name: "NotifierCore",
            dependencies: [
                "Bus", "Threads", "Wire", "Contracts", "Storage", "ServiceKit", "HTTPClient",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Services/notifier/NotifierCore"
        ),
        .executableTarget(name: "notifier", dependencies: ["NotifierCore", "ServiceKit"], path: "Services/notifier/main"),

        // MARK: ingest
        // ingest: stateless workers that turn uploaded files into text, chunks, summaries and
        // cards (any number of instances); a library with the logic and a thin main.
        .target(
            name: "IngestCore",
            dependencies: [
                "Bus", "Threads", "ToolProcess", "Wire", "Contracts", "ServiceKit", "HTTPClient",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                "ZipEntries", .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            path: "Services/ingest/IngestCore"
        ),
        .executableTarget(name: "ingest", dependencies: ["IngestCore", "ServiceKit"], path: "Services/ingest/main"),

        // MARK: edge
        // edge: the HTTP front door for apps (JWT users, JSON calls, files, SSE, OpenAPI).
        .target(
            name: "EdgeCore",
            dependencies: [
                "Bus", "Threads", "Wire", "Contracts", "ServiceKit",
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Services/edge/EdgeCore"
        ),
        .executableTarget(name: "edge", dependencies: ["EdgeCore", "ServiceKit"], path: "Services/edge/main"),

        // MARK: connectors
        // connectors: users' Google accounts (sealed refresh tokens, sync cursors) and the
        // incremental Calendar, Gmail and Drive syncs into store and ingest.
        .target(
            name: "ConnectorsCore",
            dependencies: [
                "Bus", "Threads", "Wire", "Contracts", "Storage", "ServiceKit", "HTTPClient",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Services/connectors/ConnectorsCore"
        ),
        .executableTarget(name: "connectors", dependencies: ["ConnectorsCore", "ServiceKit"], path: "Services/connectors/main"),

        // Tests.
        .target(
            name: "TestSupport",
            dependencies: [
                "Bus", "Threads", "Wire", "BrokerCore", "ZMQ", "ServiceKit", "CToolSpawn",
                .product(name: "CoreMetrics", package: "swift-metrics"), .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/Support"
        ),
        .testTarget(name: "BusTests", dependencies: ["Bus", "Threads", "Traces", "Wire", "Contracts", "ServiceKit", "BrokerCore", "TestSupport", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")], path: "Tests/BusTests", exclude: ["interop.py"]),
        .testTarget(name: "BrokerTests", dependencies: ["BrokerCore", "Bus", "Threads", "Wire", "ZMQ", "ServiceKit", "TestSupport"], path: "Tests/BrokerTests"),
        .testTarget(name: "BusCtlTests", dependencies: ["BusCtlCore", "Bus", "Threads", "Wire", "TestSupport"], path: "Tests/BusCtlTests"),
        .testTarget(
            name: "NotifierTests",
            dependencies: [
                "NotifierCore", "Bus", "Threads", "Wire", "Contracts", "Storage", "ServiceKit", "HTTPClient", "BrokerCore", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/NotifierTests",
            exclude: ["webhook_receiver.py", "apns_receiver.py", "receiver_support.py"]
        ),
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient", "Bus", "Threads", "Wire", "TestSupport"], path: "Tests/HTTPClientTests", exclude: ["http_server.py"]),
        .testTarget(
            name: "AIGatewayTests",
            dependencies: [
                "AIGatewayCore", "StoreCore", "Bus", "Threads", "Wire", "Contracts", "HTTPClient", "ServiceKit", "Storage", "BrokerCore", "TestSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/AIGatewayTests",
            exclude: ["mock_provider.py"]
        ),
        .testTarget(
            name: "StoreTests",
            // The real scheduler runs beside the store for the PDF study report's streak and mastery.
            dependencies: ["StoreCore", "store", "scheduler", "Contracts", "Storage", "Bus", "Threads", "Wire", "BrokerCore", "ServiceKit", "TestSupport",
                           .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "GRDB", package: "GRDB.swift"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            path: "Tests/StoreTests"
        ),
        .testTarget(name: "SystemTests", dependencies: ["Bus", "Threads", "Wire", "Contracts", "TestSupport"], path: "Tests/SystemTests", exclude: ["console_browser.py"]),
        // libnetfilter_queue, for the multi-host tests' delay and loss (this kernel has no netem).
        .systemLibrary(
            name: "CNetfilterQueue", path: "Tests/CNetfilterQueue", pkgConfig: "libnetfilter_queue", providers: [.apt(["libnetfilter-queue-dev"])]),
        .testTarget(name: "MultiHostTests", dependencies: ["Bus", "CNetfilterQueue", "Threads", "Wire", "Contracts", "TestSupport"], path: "Tests/MultiHostTests"),
        .testTarget(name: "StorageTests", dependencies: ["Storage", "SyncKit", "Contracts", "Bus", "Threads", "Wire", "BrokerCore", "ServiceKit", "TestSupport"], path: "Tests/StorageTests"),
        .testTarget(
            name: "TimerTickerTests",
            dependencies: ["TimerTickerCore", "Contracts", "Bus", "Threads", "Wire", "Storage", "ServiceKit", "BrokerCore", "TestSupport",
                           .product(name: "GRDB", package: "GRDB.swift"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            path: "Tests/TimerTickerTests"
        ),
        .testTarget(
            name: "SchedulerTests",
            dependencies: [
                "SchedulerCore", "StoreCore", "Bus", "Threads", "Wire", "Contracts", "Storage", "ServiceKit", "BrokerCore", "TestSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Tests/SchedulerTests",
            exclude: ["Reference"]
        ),
        .testTarget(
            name: "EdgeTests",
            dependencies: [
                "EdgeCore", "StoreCore", "AIGatewayCore", "Bus", "Contracts", "ServiceKit", "Threads", "Wire", "BrokerCore", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/EdgeTests"
        ),
        .testTarget(
            name: "IngestTests",
            dependencies: [
                "IngestCore", "ingest", "StoreCore", "AIGatewayCore", "Bus", "Threads", "ToolProcess", "Wire", "Contracts", "ServiceKit", "HTTPClient", "BrokerCore",
                "TestSupport", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/IngestTests",
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "ConnectorsTests",
            // The real store and ingest run beside connectors: events become tasks and sessions,
            // mail and Drive files materials.
            dependencies: [
                "ConnectorsCore", "StoreCore", "IngestCore", "Bus", "Threads", "Wire", "Contracts", "Storage", "ServiceKit", "HTTPClient", "BrokerCore",
                "TestSupport", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/ConnectorsTests",
            exclude: ["fake_google.py"]
        ),
    ]
)

// The benchmark processes of scripts/bench-*, built only when asked (the scripts set
// STUDYBUS_BENCHMARKS=1), so that `swift build` and CI build what users run and test.
if ProcessInfo.processInfo.environment["STUDYBUS_BENCHMARKS"] != nil {
    package.targets += [
        .executableTarget(name: "bus-bench", dependencies: ["Bus", "ServiceKit", "Threads", "Wire", .product(name: "Logging", package: "swift-log")], path: "Benchmarks/BusBench"),
        .executableTarget(
            name: "TimerTickerBench",
            dependencies: ["TimerTickerCore", "Bus", "Threads", "Wire", "Contracts", "BrokerCore", "ServiceKit", "Storage", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Benchmarks/TimerTickerBench"
        ),
        .executableTarget(
            name: "AIGatewayBench",
            dependencies: ["AIGatewayCore", "Bus", "Threads", "Wire", "Contracts", "BrokerCore", .product(name: "Logging", package: "swift-log")],
            path: "Benchmarks/AIGatewayBench"
        ),
        .executableTarget(name: "SchedulerBench", dependencies: ["SchedulerCore", "Bus", "Threads", "Wire", "Contracts"], path: "Benchmarks/SchedulerBench"),
        .executableTarget(
            name: "StoreBench",
            dependencies: [
                "StoreCore", "BrokerCore", "Bus", "Threads", "Wire", "Contracts", "ServiceKit",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Benchmarks/StoreBench"
        ),
        .executableTarget(
            name: "NotifierBench",
            dependencies: ["Bus", "Threads", "Wire", "Contracts", "ServiceKit", "Storage", "HTTPClient", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Benchmarks/NotifierBench"
        ),
        .executableTarget(
            name: "EdgeBench",
            dependencies: [
                "EdgeCore", "StoreCore", "BrokerCore", "Bus", "Contracts", "ServiceKit", "Wire",
                .product(name: "Logging", package: "swift-log"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Benchmarks/EdgeBench"
        ),
        .executableTarget(
            name: "IngestBench",
            dependencies: ["Bus", "Threads", "Wire", "Contracts", .product(name: "Logging", package: "swift-log")],
            path: "Benchmarks/IngestBench"
        ),
    ]
}

// What the fuzzers hold each input to (Fuzz/Checks), built always: the unit tests replay every
// seed and past find through it (Tests/FuzzTests), the libFuzzer harnesses feed it new inputs.
package.targets += [
    .target(
        name: "FuzzChecks",
        dependencies: ["BrokerCore", "Bus", "IngestCore", "Wire", "ZMQ"],
        path: "Fuzz/Checks"
    ),
    .testTarget(name: "FuzzTests", dependencies: ["FuzzChecks", "BrokerCore", "Bus", "Threads", "TestSupport"], path: "Tests/FuzzTests"),
]

// libFuzzer harnesses (Fuzz/<Name>Fuzz), built only with STUDYBUS_FUZZ=1 by scripts/fuzz, which
// passes `--sanitize=fuzzer`: libFuzzer brings its own `main`, so each is a library-style
// executable around one of FuzzChecks' checks.
if ProcessInfo.processInfo.environment["STUDYBUS_FUZZ"] != nil {
    package.targets += ["PayloadFuzz", "HeaderFuzz", "BrokerFuzz", "IngestFuzz"].map { name in
        .executableTarget(
            name: name, dependencies: ["FuzzChecks", "BrokerCore", .product(name: "Logging", package: "swift-log")], path: "Fuzz/\(name)",
            swiftSettings: [.unsafeFlags(["-parse-as-library"])])
    }
}

// One place for the compiler settings of every Swift target: Swift 6 language mode (complete
// strict concurrency checking) plus the upcoming features we want enforced everywhere.
for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.swiftLanguageMode(.v6))
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    target.swiftSettings = settings
}
