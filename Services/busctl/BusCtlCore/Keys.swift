import ArgumentParser
import Bus
import Foundation
import Glibc
import Wire

extension BusCtl {
    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make CURVE key pairs and list them in the broker's allowlist.",
            discussion: """
            Every process on a secure bus has a key pair in ZeroMQ's certificate format: \
            NAME.key (the public key, shareable) and NAME.key_secret (both keys, mode 600). \
            The broker admits the public keys its allowlist lists, each with a role. \
            docs/operations.md ("Keys and roles") has the whole set-up and rotation.

            Examples:
              busctl keys new broker --dir keys
              busctl keys new service store --dir keys >> keys/allowlist
              busctl keys allow laptop.key operator alice --allowlist keys/allowlist
            """,
            subcommands: [New.self, Allow.self])
    }
}

extension BusCtl.Keys {
    struct New: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a new key pair and print its allowlist line.",
            discussion: """
            Writes DIR/NAME.key and DIR/NAME.key_secret (mode 600; an existing file is never \
            replaced) and prints the line that admits the key, ready to append to the \
            allowlist. Roles: service NAME, operator NAME, edge NAME, user USERID; and broker, \
            the broker's own pair (NAME defaults to broker; no allowlist line: give broker.key \
            to every process as BUS_BROKER_KEY).
            """)

        @Argument(help: "service, operator, edge, user or broker.") var role: String
        @Argument(help: "The service's name, the user's id, or a label: the key files' name.") var name: String?
        @Option(help: "The directory to write to (created with mode 700 if missing).") var dir = "."

        func run() throws { try reportingBusErrors { try make() } }

        private func make() throws {
            let identity: BusIdentity?
            let fileName: String
            if role == "broker" {
                identity = nil
                fileName = name ?? "broker"
            } else {
                guard let name else { throw ValidationError("give the key's name: busctl keys new \(role) NAME") }
                identity = try parseIdentity(role: role, name: name)
                fileName = name
            }
            let pair = try CurveKeyPair.generate()
            let (publicPath, secretPath) = try KeyFile.write(pair, name: fileName, directory: dir)
            Output.warning("wrote \(publicPath) and \(secretPath) (mode 600)")
            if let identity {
                Output.line(Allowlist.line(for: pair.publicKey, identity))
            } else {
                Output.warning("give \(publicPath) to every process as BUS_BROKER_KEY, and \(secretPath) to the broker as BUS_KEY")
            }
        }
    }

    struct Allow: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Append a public key with its role to the broker's allowlist.",
            discussion: """
            Reads the public key from KEYFILE (NAME.key) and appends 'KEY ROLE NAME' to the \
            allowlist, which is created if missing. The allowlist is checked first: a key \
            listed already, or a line the broker could not read, is an error and nothing is \
            written. One identity may have two keys while one replaces the other.
            """)

        @Argument(help: "The public key file, e.g. store.key.") var keyFile: String
        @Argument(help: "service, operator, edge or user.") var role: String
        @Argument(help: "The service's name or the user's id; an optional label for operator and edge.") var name: String?
        @Option(help: "The allowlist file (default: $BUS_ALLOWLIST).") var allowlist: String?

        func run() throws { try reportingBusErrors { try allow() } }

        private func allow() throws {
            guard let path = allowlist ?? ProcessInfo.processInfo.environment["BUS_ALLOWLIST"].flatMap({ $0.isEmpty ? nil : $0 }) else {
                throw ValidationError("give the allowlist with --allowlist FILE (or set BUS_ALLOWLIST)")
            }
            let identity = try parseIdentity(role: role, name: name)
            let key = try KeyFile.readPublic(path: keyFile).publicKey
            var text = ""
            if FileManager.default.fileExists(atPath: path) {
                let list = try Allowlist.read(path: path)
                if let entry = list.entries.first(where: { $0.key == key }) {
                    throw BusError.alreadyExists("\(path), line \(entry.line) lists this key already, as \(entry.identity)")
                }
                text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            }
            let line = Allowlist.line(for: key, identity)
            try append((text.isEmpty || text.hasSuffix("\n") ? "" : "\n") + line + "\n", to: path)
            Output.line(line)
        }

        private func append(_ text: String, to path: String) throws {
            let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { throw BusError.failedPrecondition("cannot open \(path): \(String(cString: strerror(errno)))") }
            defer { close(descriptor) }
            let bytes = Array(text.utf8)
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written == bytes.count else { throw BusError.failedPrecondition("cannot write \(path): \(String(cString: strerror(errno)))") }
        }
    }
}

/// The identity `role` and `name` give, with the allowlist's rules.
private func parseIdentity(role: String, name: String?) throws -> BusIdentity {
    guard let role = BusRole(rawValue: role) else {
        throw ValidationError("unknown role '\(role)': the roles are \(BusRole.wireValues.joined(separator: ", "))")
    }
    do {
        return try BusIdentity(role: role, name: name)
    } catch {
        throw ValidationError(error.message)
    }
}

/// Runs `body`; a ``BusError`` is printed on standard error and becomes the exit status, as
/// for a failed call.
private func reportingBusErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as BusError {
        Output.error("\(error.code.name): \(error.message)")
        throw ExitCode(Int32(error.code.rawValue))
    }
}
