import Foundation
import Wire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which addresses a client may open connections to: public unicast addresses, plus the networks
/// an operator allows. A client with a policy checks the address of every socket libcurl opens
/// (after name resolution, before connecting), so neither a name's spelling nor DNS that answers
/// differently later (rebinding) reaches an address the policy refuses; redirects are not
/// followed and proxies are not used, so nothing connects on the caller's behalf unchecked.
public struct DestinationPolicy: Sendable, Equatable {
    /// Networks allowed besides public addresses (tests, private deployments).
    public var allowedNetworks: [IPNetwork]

    /// Public addresses, and the addresses in `allowedNetworks`.
    public init(allowing allowedNetworks: [IPNetwork] = []) {
        self.allowedNetworks = allowedNetworks
    }

    /// Why `address` may not be connected to, or nil when it may. An IPv4-mapped IPv6 address is
    /// judged as the IPv4 address it reaches.
    public func refusal(for address: IPAddress) -> AddressClass? {
        let address = address.unmapped
        if allowedNetworks.contains(where: { $0.contains(address) }) { return nil }
        let kind = AddressClass(address)
        return kind == .public ? nil : kind
    }
}

/// What kind of destination an address is, after the IANA special-purpose registries.
public enum AddressClass: String, Sendable, Equatable, CustomStringConvertible {
    case `public`
    /// 127/8, ::1.
    case loopback
    /// 10/8, 172.16/12, 192.168/16, 100.64/10 (carrier-grade NAT), fc00::/7, fec0::/10, 64:ff9b:1::/48.
    case `private`
    /// 169.254/16 (cloud metadata services live here), fe80::/10.
    case linkLocal = "link-local"
    /// 0/8 (0.0.0.0 reaches the local host on Linux), ::.
    case unspecified
    /// 224/4, ff00::/8.
    case multicast
    /// Documentation, benchmarking, protocol assignments, 240/4, and IPv6 outside 2000::/3.
    case reserved

    /// `loopback address`, `link-local address`, …
    public var description: String { "\(rawValue) address" }

    public init(_ address: IPAddress) {
        switch address.unmapped {
        case .v4(let value):
            self = Self.v4Ranges.first { $0.network.contains(.v4(value)) }?.kind ?? .public
        case .v6(let value):
            // NAT64 (RFC 6052) reaches the IPv4 address in the low 32 bits.
            if Self.nat64.contains(.v6(value)) {
                self = AddressClass(.v4(UInt32(truncatingIfNeeded: value)))
            } else if let range = Self.v6Ranges.first(where: { $0.network.contains(.v6(value)) }) {
                self = range.kind
            } else {
                self = Self.globalUnicast.contains(.v6(value)) ? .public : .reserved
            }
        }
    }

    private static func ranges(_ table: [(String, AddressClass)]) -> [(network: IPNetwork, kind: AddressClass)] {
        table.map { (IPNetwork($0.0)!, $0.1) }
    }

    private static let v4Ranges = ranges([
        ("0.0.0.0/8", .unspecified), ("10.0.0.0/8", .private), ("100.64.0.0/10", .private), ("127.0.0.0/8", .loopback),
        ("169.254.0.0/16", .linkLocal), ("172.16.0.0/12", .private), ("192.0.0.0/24", .reserved), ("192.0.2.0/24", .reserved),
        ("192.88.99.0/24", .reserved), ("192.168.0.0/16", .private), ("198.18.0.0/15", .reserved), ("198.51.100.0/24", .reserved),
        ("203.0.113.0/24", .reserved), ("224.0.0.0/4", .multicast), ("240.0.0.0/4", .reserved),
    ])
    private static let v6Ranges = ranges([
        ("::/128", .unspecified), ("::1/128", .loopback), ("64:ff9b:1::/48", .private), ("100::/64", .reserved),
        ("2001::/23", .reserved), ("2001:db8::/32", .reserved), ("2002::/16", .reserved), ("3fff::/20", .reserved),
        ("fc00::/7", .private), ("fe80::/10", .linkLocal), ("fec0::/10", .private), ("ff00::/8", .multicast),
    ])
    private static let nat64 = IPNetwork("64:ff9b::/96")!
    private static let globalUnicast = IPNetwork("2000::/3")!
}

/// An IPv4 or IPv6 address.
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    case v4(UInt32)
    case v6(UInt128)

    /// The standard text forms only: dotted decimal `a.b.c.d` and RFC 4291 IPv6 (`inet_pton`),
    /// not the shorthand spellings (`127.1`, `0x7f.1`) URL parsers accept.
    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self = .v4(UInt32(bigEndian: v4.s_addr))
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self = .v6(Self.integer(v6))
            return
        }
        return nil
    }

    init(_ address: in6_addr) {
        self = .v6(Self.integer(address))
    }

    private static func integer(_ address: in6_addr) -> UInt128 {
        withUnsafeBytes(of: address) { bytes in bytes.reduce(UInt128(0)) { $0 << 8 | UInt128($1) } }
    }

    /// `::ffff:a.b.c.d` as `a.b.c.d`; any other address as it is.
    public var unmapped: IPAddress {
        if case .v6(let value) = self, value >> 32 == 0xffff { return .v4(UInt32(truncatingIfNeeded: value)) }
        return self
    }

    public var description: String {
        switch self {
        case .v4(let value):
            return [24, 16, 8, 0].map { String(value >> $0 & 0xff) }.joined(separator: ".")
        case .v6(let value):
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { bytes in
                for index in 0..<16 { bytes[index] = UInt8(truncatingIfNeeded: value >> (8 * (15 - index))) }
            }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return "?" }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}

/// A network in CIDR notation: `10.0.0.0/8`, `fd00::/8`; a bare address is the one host.
public struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    /// The first address (host bits cleared).
    public let address: IPAddress
    public let prefixLength: Int

    /// Parses `address/prefix` or `address` (standard forms, see ``IPAddress``). Host bits are
    /// cleared (`10.1.2.3/8` is `10.0.0.0/8`); an IPv4-mapped IPv6 network is kept as the IPv4
    /// network it covers, since addresses are judged unmapped.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(String(parts[0])) else { return nil }
        let width = if case .v4 = address { 32 } else { 128 }
        var prefix = width
        if parts.count == 2 {
            guard let given = Int(parts[1]), parts[1].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isNumber), (0...width).contains(given)
            else { return nil }
            prefix = given
        }
        if case .v6(let value) = address, prefix >= 96, value >> 32 == 0xffff {
            self.init(address.unmapped, prefixLength: prefix - 96)
        } else {
            self.init(address, prefixLength: prefix)
        }
    }

    /// `prefixLength` must be within the address's width.
    init(_ address: IPAddress, prefixLength: Int) {
        self.prefixLength = prefixLength
        switch address {
        case .v4(let value): self.address = .v4(value & Self.mask32(prefixLength))
        case .v6(let value): self.address = .v6(value & Self.mask128(prefixLength))
        }
    }

    public func contains(_ other: IPAddress) -> Bool {
        switch (address, other) {
        case (.v4(let first), .v4(let value)): value & Self.mask32(prefixLength) == first
        case (.v6(let first), .v6(let value)): value & Self.mask128(prefixLength) == first
        default: false
        }
    }

    public var description: String { "\(address)/\(prefixLength)" }

    /// An operator's list of networks from the environment variable `variable`: CIDRs (a bare
    /// address is one host) separated by commas or spaces, at most 100.
    /// - Throws: `INVALID_ARGUMENT` naming the variable and the entry it cannot read.
    public static func list(_ text: String?, variable: String) throws(BusError) -> [IPNetwork] {
        let entries = (text ?? "").split { $0 == "," || $0.isWhitespace }
        guard entries.count <= 100 else { throw .invalidArgument("environment variable \(variable) lists more than 100 networks") }
        var networks: [IPNetwork] = []
        for entry in entries {
            guard let network = IPNetwork(String(entry)) else {
                throw .invalidArgument("environment variable \(variable) must list CIDRs such as 10.0.0.0/8 or fd00::/8, got '\(entry.prefix(100))'")
            }
            networks.append(network)
        }
        return networks
    }

    private static func mask32(_ prefix: Int) -> UInt32 { prefix == 0 ? 0 : UInt32.max << (32 - prefix) }
    private static func mask128(_ prefix: Int) -> UInt128 { prefix == 0 ? 0 : UInt128.max << (128 - prefix) }
}
