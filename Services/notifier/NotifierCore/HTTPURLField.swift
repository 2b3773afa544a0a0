import Bus
import Foundation
import HTTPClient
import Wire

extension Field {
    /// An http(s) URL with a host, of at most 2,000 characters: what a notification's link must be.
    static func httpURL(_ text: String, _ name: String) throws(BusError) {
        try length(text, name, maximum: 2000)
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host?.isEmpty == false
        else { throw invalid(name, "must be an http or https URL") }
    }

    /// A URL the notifier will POST to for the user (a webhook, an ntfy topic): at most 2,000
    /// characters, http or https with a host and without a user name or password, as libcurl
    /// (which connects) reads it. Where it leads is checked at each connection, against the
    /// address it resolves to then (`NOTIFIER_ALLOWED_NETWORKS`), not here: a name can resolve
    /// elsewhere later.
    static func endpointURL(_ text: String, _ name: String) throws(BusError) {
        try length(text, name, maximum: 2000)
        guard let url = ParsedURL(text), url.scheme == "http" || url.scheme == "https", !url.host.isEmpty else {
            throw invalid(name, "must be an http or https URL")
        }
        guard !url.hasUserInfo else { throw invalid(name, "must not contain a user name or password") }
    }
}
