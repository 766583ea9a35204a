import NIOHTTP1
import TollgateHTTP

/// What the forward listener does with a request head, decided before any task exists: forward
/// it to a URL, or answer it itself.
enum ForwardTarget {
    /// Load this absolute `http` URL.
    case forward(HTTPURL)
    /// Answer with this response; nothing goes upstream.
    case refuse(OwnResponse)

    /// Classifies a request head received in forward mode.
    static func classify(_ head: NIOHTTP1.HTTPRequestHead) -> ForwardTarget {
        if head.method == .CONNECT {
            return .refuse(
                OwnResponse(
                    .badRequest,
                    status: 501,
                    "CONNECT (tunnels to https origins) is not supported yet by this build"
                )
            )
        }
        let target = head.uri
        if target.hasPrefix("/") || target == "*" {
            return .refuse(
                OwnResponse(
                    .badRequest,
                    "this is a forward proxy: the request target must be an absolute http:// URL, not '\(target)'"
                )
            )
        }
        if target.utf8.count >= 8, target.prefix(8).lowercased() == "https://" {
            return .refuse(
                OwnResponse(.badRequest, status: 501, "forwarding https:// URLs is not supported yet by this build")
            )
        }
        let url: HTTPURL
        do throws(HTTPURL.ParseError) {
            url = try HTTPURL.parse(target)
        } catch {
            return .refuse(OwnResponse(.badRequest, "bad request target: \(error.description)"))
        }
        guard url.scheme == "http" else {
            return .refuse(OwnResponse(.badRequest, "only http:// URLs can be forwarded, not \(url.scheme)://"))
        }
        return .forward(url)
    }
}
