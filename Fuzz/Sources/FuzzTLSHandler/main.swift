// The TLS handler (TollgateTLS over OpenSSL's memory BIOs) on an EmbeddedChannel, fed arbitrary
// bytes as the peer's ciphertext. The first byte picks the side: even, a server (what a client
// of the proxy's TLS listeners or interception sends); odd, a client that has sent its
// ClientHello (what an origin sends back). The rest arrives in pieces of varying size.
//
// Invariants:
// - bytes nobody holding a key produced never complete a handshake and never come out as
//   plaintext: the handler behind sees no data and no `TLSHandshakeCompleted`;
// - whatever arrives, the channel ends cleanly when closed (nothing left in the pipeline, no
//   OpenSSL object leaked: LeakSanitizer runs after each input).
import FuzzSupport
import NIOCore
import NIOEmbedded
import TollgateTLS

/// Records what gets past the TLS handler.
final class Recorder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    var plaintextBytes = 0
    var handshakes = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        plaintextBytes += unwrapInboundIn(data).readableBytes
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is TLSHandshakeCompleted { handshakes += 1 }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {}
}

/// The contexts, made once: a CA, a leaf for `localhost`, a server and a client trusting the CA.
struct Contexts {
    let server: TLSContext
    let client: TLSContext

    init() {
        do {
            let authority = try CertificateAuthority.create(commonName: "Tollgate Fuzz CA")
            let leaf = try authority.issueLeaf(for: "localhost")
            server = try TLSContext(configuration: .makeServerConfiguration(identity: leaf))
            var client = TLSConfiguration.makeClientConfiguration()
            client.trustRoots = .certificates([authority.certificate])
            self.client = try TLSContext(configuration: client)
        } catch {
            fatalError("cannot make the TLS contexts: \(error)")
        }
    }
}

let contexts = Contexts()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTLSHandler(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let all = FuzzInput(start, count)
    let isServer = all.bytes[0] & 1 == 0
    let input = FuzzInput(bytes: Array(all.bytes.dropFirst()))
    let channel = EmbeddedChannel()
    let recorder = Recorder()
    do {
        if isServer {
            try channel.pipeline.syncOperations.addTLSServerHandler(context: contexts.server)
        } else {
            try channel.pipeline.syncOperations.addTLSClientHandler(
                context: contexts.client,
                serverHostname: "localhost"
            )
        }
        try channel.pipeline.syncOperations.addHandler(recorder)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
    } catch {
        fatalError("cannot set up the channel: \(error)")
    }
    for piece in input.pieces(largest: 400) {
        guard channel.isActive else { break }
        channel.read()
        // Errors are the handler refusing the bytes, as it should; the channel closes.
        _ = try? channel.writeInbound(ByteBuffer(bytes: piece))
        channel.embeddedEventLoop.run()
        while (try? channel.readOutbound(as: ByteBuffer.self)) ?? nil != nil {}
    }
    fuzzCheck(recorder.handshakes == 0, "arbitrary bytes completed a handshake")
    fuzzCheck(recorder.plaintextBytes == 0, "arbitrary bytes came out as \(recorder.plaintextBytes) bytes of plaintext")
    if channel.isActive { _ = try? channel.close().wait() }
    channel.embeddedEventLoop.run()
    _ = try? channel.finish()
    fuzzCheck(recorder.plaintextBytes == 0, "plaintext delivered while closing")
    return 0
}

/// The executable's entry point: libFuzzer's driver, calling ``fuzzTLSHandler(_:_:)`` for each input.
@main
enum Main {
    static func main() { runLibFuzzer(fuzzTLSHandler) }
}
