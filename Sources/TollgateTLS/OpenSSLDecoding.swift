internal import COpenSSL
import Foundation

/// What reading certificates and revocation lists share: ASN.1 times as dates, DER encodings, and
/// telling the end of a PEM input from damage in it.
enum OpenSSLDecoding {
    /// `time` as a date; `field` names it in the error (`a certificate's notAfter`).
    static func date(_ time: UnsafePointer<ASN1_TIME>?, _ field: String) throws -> Date {
        var parts = tm()
        guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else {
            throw OpenSSLError(.invalidDER, "reading \(field)")
        }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    /// The DER bytes `encode` writes (an `i2d_…` function: asked once for the length with a null
    /// cursor, then to write); `what` names the object in the error.
    static func der(_ what: String, _ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) throws -> [UInt8] {
        let length = encode(nil)
        guard length > 0 else { throw OpenSSLError(.invalidDER, "encoding \(what)") }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let written = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return encode(&cursor)
        }
        guard written == length else { throw OpenSSLError(.invalidDER, "encoding \(what)") }
        return bytes
    }

    /// Whether the last error of a loop of `PEM_read_bio_…` calls says the input was used up ("no
    /// start line"), not damaged.
    static var pemInputEnded: Bool {
        let last = ERR_peek_last_error()
        return tg_ERR_GET_LIB(last) == ERR_LIB_PEM && tg_ERR_GET_REASON(last) == PEM_R_NO_START_LINE
    }
}
