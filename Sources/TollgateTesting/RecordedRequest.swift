import Foundation
public import TollgateHTTP

/// A request as a ``LoopbackOrigin`` received it.
public struct RecordedRequest: Sendable {
    /// The method token.
    public var method: String
    /// The request target as sent (origin-form or absolute-form).
    public var target: String
    /// The header fields in order.
    public var headerFields: HeaderFields
    /// The body, de-chunked.
    public var body: [UInt8]
    /// Which accepted connection carried it (1, 2, … in accept order).
    public var connectionNumber: Int
    /// Its position among the requests on that connection (1, 2, …).
    public var requestNumberOnConnection: Int

    /// The body as UTF-8 text.
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
    /// The path part of the target.
    public var path: String {
        var target = Substring(self.target)
        if let scheme = target.range(of: "://") {
            target = target[scheme.upperBound...]
            target = target[(target.firstIndex(of: "/") ?? target.endIndex)...]
        }
        return String(target.prefix { $0 != "?" })
    }
}
