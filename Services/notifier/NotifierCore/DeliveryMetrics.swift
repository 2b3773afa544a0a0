import Contracts
import CoreMetrics

/// `studybus_notifier_deliveries_total{channel, outcome}`: each finished delivery attempt. Both
/// labels come from closed sets (the channel kinds, the outcomes), so the series stay few.
enum DeliveryMetrics {
    static func count(_ channel: ChannelType, _ outcome: DeliveryOutcome) {
        Counter(label: "studybus_notifier_deliveries_total", dimensions: [("channel", channel.rawValue), ("outcome", outcome.metricLabel)]).increment()
    }
}

extension DeliveryOutcome {
    var metricLabel: String {
        switch self {
        case .sent: "sent"
        case .retry: "retry"
        case .failed: "failed"
        case .disableChannel: "disable_channel"
        case .removeChannel: "remove_channel"
        }
    }
}
