import Bus
import Foundation
import Wire

extension Field {
    /// An http(s) URL with a host, of at most 2,000 characters: what webhooks, ntfy topics and a
    /// notification's link must be.
    static func httpURL(_ text: String, _ name: String) throws(BusError) {
        try length(text, name, maximum: 2000)
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host?.isEmpty == false
        else { throw invalid(name, "must be an http or https URL") }
    }
}
