import BrokerCore
import Bus
import Foundation
import Glibc
import TestSupport
import Testing
import Wire

@Suite("busctl keys, and processes starting with and without keys")
struct KeysTests {
    @Test("keys new writes a pair (secret mode 600) and prints the allowlist line; it never replaces a key")
    func new() async throws {
        let keys = try TestKeys()
        defer { keys.remove() }
        let made = try await busctl(["keys", "new", "service", "store", "--dir", keys.directory], nil)
        #expect(made.status == 0)
        #expect(made.err.contains("wrote \(keys.publicPath("store")) and \(keys.secretPath("store"))"))
        let pair = try KeyFile.readSecret(path: keys.secretPath("store"))
        let line = made.out.trimmingCharacters(in: .newlines)
        #expect(line == "\(pair.publicKey.z85) service store")
        #expect(try Allowlist.parse(line, source: "out").identity(of: pair.publicKey)?.description == "service store")
        #expect(try KeyFile.readPublic(path: keys.publicPath("store")).publicKey == pair.publicKey)
        var status = stat()
        stat(keys.secretPath("store"), &status)
        #expect(status.st_mode & 0o777 == 0o600)

        let again = try await busctl(["keys", "new", "service", "store", "--dir", keys.directory], nil)
        #expect(again.status == Int32(StatusCode.alreadyExists.rawValue))
        #expect(again.err.contains("ALREADY_EXISTS: key file"))
        #expect(try KeyFile.readSecret(path: keys.secretPath("store")) == pair)

        let broker = try await busctl(["keys", "new", "broker", "--dir", keys.directory + "/other"], nil)
        #expect(broker.status == 0 && broker.out.isEmpty)
        #expect(broker.err.contains("BUS_BROKER_KEY"))
        #expect((try? KeyFile.readSecret(path: keys.directory + "/other/broker.key_secret")) != nil)

        #expect(try await busctl(["keys", "new", "root", "x", "--dir", keys.directory], nil).status == 64)
        #expect(try await busctl(["keys", "new", "service", "--dir", keys.directory], nil).status == 64)
    }

    @Test("keys allow appends a checked line; a key listed already, or an allowlist the broker could not read, changes nothing")
    func allow() async throws {
        let keys = try TestKeys()
        defer { keys.remove() }
        let laptop = try keys.make("laptop"), web = try keys.make("web")
        let list = keys.directory + "/allowlist"
        try "# the broker's allowlist".write(toFile: list, atomically: true, encoding: .utf8)
        let first = try await busctl(["keys", "allow", keys.publicPath("laptop"), "operator", "alice", "--allowlist", list], nil)
        #expect(first.status == 0)
        #expect(first.out == "\(laptop.publicKey.z85) operator alice\n")
        let second = try await busctl(["keys", "allow", keys.publicPath("web"), "edge"], nil, environment: ["BUS_ALLOWLIST": list])
        #expect(second.status == 0)
        let written = try String(contentsOfFile: list, encoding: .utf8)
        #expect(written == "# the broker's allowlist\n\(laptop.publicKey.z85) operator alice\n\(web.publicKey.z85) edge\n")
        let parsed = try Allowlist.read(path: list)
        #expect(parsed.identity(of: web.publicKey)?.role == .edge)

        let twice = try await busctl(["keys", "allow", keys.publicPath("laptop"), "operator", "bob", "--allowlist", list], nil)
        #expect(twice.status == Int32(StatusCode.alreadyExists.rawValue))
        #expect(twice.err.contains("line 2 lists this key already, as operator alice"))
        #expect(try await busctl(["keys", "allow", keys.publicPath("web"), "service", "--allowlist", list], nil).status == 64, "a service needs its name")
        #expect(try String(contentsOfFile: list, encoding: .utf8) == written)

        try (written + "garbage here\n").write(toFile: list, atomically: true, encoding: .utf8)
        let broken = try await busctl(["keys", "allow", keys.publicPath("web"), "user", "u-1", "--allowlist", list], nil)
        #expect(broken.status == Int32(StatusCode.failedPrecondition.rawValue))
        #expect(broken.err.contains("line 4: 'garbage' is not a CURVE public key"))
    }

    @Test("busctl with security on needs its keys; with them it reaches a CURVE broker, without CURVE it does not; off warns")
    func busctlKeys() async throws {
        let keys = try TestKeys()
        defer { keys.remove() }
        _ = try keys.operator("busctl")
        try await withBroker(startBroker(keys: keys)) { broker, endpoints in
            let missing = try await busctl(["health", "broker"], endpoints, environment: ["BUS_SECURITY": "on"])
            #expect(missing.status == Int32(StatusCode.failedPrecondition.rawValue))
            #expect(missing.err.contains("BUS_KEY is not set"))
            let secure = try await busctl(["health", "broker"], endpoints, environment: keys.environment("busctl"))
            #expect(secure.status == 0 && secure.out == "broker SERVING \(BuildInfo.description)\n")
            #expect(!secure.err.contains("BUS_SECURITY=off"))
            let plain = try await busctl(["health", "broker", "--timeout", "1"], endpoints)
            #expect(plain.status == Int32(StatusCode.deadlineExceeded.rawValue))
            #expect(plain.err.contains("warning: BUS_SECURITY=off"))
            #expect(try await busctl(["health", "broker"], endpoints, environment: keys.environment("busctl")).status == 0, "the broker still serves")
        }
    }

    @Test("a process refuses to start on a secret key others may read; with BUS_SECURITY=off it warns at start")
    func processStart() async throws {
        let keys = try TestKeys()
        defer { keys.remove() }
        let log = keys.directory + "/broker.log"
        let bind = ["BUS_RPC_BIND": "tcp://127.0.0.1:*", "BUS_PUB_BIND": "tcp://127.0.0.1:*", "BUS_SUB_BIND": "tcp://127.0.0.1:*", "LOG_FORMAT": "text"]
        let binary = builtProductsDirectory.appending(path: "broker").path

        chmod(keys.secretPath("broker"), 0o640)
        let loose = try ChildProcess(executable: binary, environment: bind.merging(keys.environment("broker")) { $1 }, logFile: log)
        #expect(await loose.waitForExit() == 2)
        #expect(try String(contentsOfFile: log, encoding: .utf8).contains("chmod 600 \(keys.secretPath("broker"))"))

        chmod(keys.secretPath("broker"), 0o600)
        let withoutAllowlist = try ChildProcess(executable: binary, environment: bind.merging(keys.environment("broker")) { $1 }, logFile: log)
        #expect(await withoutAllowlist.waitForExit() == 2)
        #expect(try String(contentsOfFile: log, encoding: .utf8).contains("BUS_ALLOWLIST is not set"))

        try keys.rewriteAllowlist(["# no keys yet", "not-a-key service store"])
        let secureEnvironment = bind.merging(keys.environment("broker")) { $1 }.merging(["BUS_ALLOWLIST": keys.allowlistPath]) { $1 }
        let badAllowlist = try ChildProcess(executable: binary, environment: secureEnvironment, logFile: log)
        #expect(await badAllowlist.waitForExit() == 2)
        #expect(try String(contentsOfFile: log, encoding: .utf8).contains("\(keys.allowlistPath), line 2: 'not-a-key' is not a CURVE public key"))

        _ = try keys.operator("busctl")
        try keys.rewriteAllowlist([])
        let secure = try ChildProcess(executable: binary, environment: secureEnvironment, logFile: log)
        try await eventually("the CURVE broker admitting its allowlist") {
            (try String(contentsOfFile: log, encoding: .utf8)).contains("bus security on: admitting the keys of the allowlist")
        }
        let endpoints = try await brokerEndpoints(logFile: log)
        #expect(try await busctl(["health", "broker", "--timeout", "2"], endpoints, environment: keys.environment("busctl")).status
                == Int32(StatusCode.deadlineExceeded.rawValue), "an empty allowlist admits nobody")
        // SIGHUP rereads the allowlist without a restart; a list with an error is not used.
        try keys.rewriteAllowlist([Allowlist.line(for: try KeyFile.readPublic(path: keys.publicPath("busctl")).publicKey, try BusIdentity(role: .operator, name: nil))])
        kill(secure.pid, SIGHUP)
        try await eventually("the operator key admitted after SIGHUP") {
            try await busctl(["health", "broker", "--timeout", "2"], endpoints, environment: keys.environment("busctl")).status == 0
        }
        try keys.rewriteAllowlist(["garbage"])
        kill(secure.pid, SIGHUP)
        try await eventually("a broken allowlist refused on reload") {
            (try String(contentsOfFile: log, encoding: .utf8)).contains("allowlist not reloaded; the broker keeps the one it has")
        }
        #expect(try await busctl(["health", "broker"], endpoints, environment: keys.environment("busctl")).status == 0)
        await secure.terminate()

        let open = try ChildProcess(executable: binary, environment: bind.merging(["BUS_SECURITY": "off"]) { $1 }, logFile: log)
        try await eventually("the warning while security is off") {
            (try String(contentsOfFile: log, encoding: .utf8)).contains("BUS_SECURITY=off: bus traffic is neither encrypted nor authenticated")
        }
        await open.terminate()
    }

    @Test("a service binary with its key serves over CURVE: audiences enforced, busctl describe shows them")
    func serviceOverCurve() async throws {
        let keys = try TestKeys()
        defer { keys.remove() }
        _ = try keys.service("timer-ticker")
        _ = try keys.operator("busctl")
        let client = try keys.edge("client")
        let otherUser = try keys.user("u2")
        try await withBroker(startBroker(keys: keys)) { broker, endpoints in
            let environment = serviceEnvironment(endpoints).merging(keys.environment("timer-ticker")) { $1 }
                .merging(["DATA_DIR": keys.directory + "/timer-ticker", "LOG_LEVEL": "warning"]) { $1 }
            let service = try ChildProcess(executable: builtProductsDirectory.appending(path: "timer-ticker").path, environment: environment,
                                           logFile: keys.directory + "/timer-ticker.log")
            let bus = try Bus(configuration: busConfiguration(endpoints, source: "client", security: client), logger: testLogger("client"))
            try await eventually("timer-ticker serving over CURVE", timeout: Wait.startup) {
                (try? await bus.call(Reserved.health("timer-ticker"), Empty(), options: CallOptions(timeout: .milliseconds(500))))?.status == .serving
            }
            // The broker stamps the edge key's caller; what the client claims itself changes nothing.
            var claimingOperator = CallOptions(user: "u1", timeout: .seconds(10))
            claimingOperator.claimedCaller = try BusIdentity(role: .operator, name: nil)
            #expect(try await bus.callRaw(service: "timer-ticker", method: "timers.list", payload: Data("{}".utf8), options: claimingOperator).header.code == .ok)
            let backup = await #expect(throws: BusError.self) {
                try await bus.callRaw(service: "timer-ticker", method: "_backup", payload: Data(), options: claimingOperator)
            }
            #expect(backup?.code == .permissionDenied)
            #expect(backup?.message.contains("edge") == true, "the service saw the stamped caller: \(backup?.message ?? "")")
            let asUser = try Bus(configuration: busConfiguration(endpoints, source: "u2", security: otherUser), logger: testLogger("u2"))
            let asAnother = await #expect(throws: BusError.self) {
                try await asUser.callRaw(service: "timer-ticker", method: "timers.list", payload: Data("{}".utf8), options: CallOptions(user: "u1"))
            }
            #expect(asAnother?.code == .permissionDenied)
            #expect(try await asUser.callRaw(service: "timer-ticker", method: "timers.list", payload: Data("{}".utf8), options: CallOptions(user: "u2")).header.code == .ok)
            await asUser.shutdown()

            let described = try await busctl(["describe", "timer-ticker"], endpoints, environment: keys.environment("busctl"))
            #expect(described.status == 0)
            #expect(described.out.contains("timers.list  "))
            #expect(described.out.contains("audience: app (apps (edge and user keys), services and operators)"))
            #expect(described.out.contains("audience: operator (operators)"), "_backup")
            await bus.shutdown()
            await service.terminate()
        }
    }
}

