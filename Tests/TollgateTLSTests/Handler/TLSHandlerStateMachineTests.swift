import Testing

@testable import TollgateTLS

@Suite("TLSHandlerStateMachine")
struct TLSHandlerStateMachineTests {
    private typealias Machine = TLSHandlerStateMachine

    @Test("strict: active → handshake → data flows → close sends close_notify → inactive is quiet")
    func strictLifecycle() {
        var machine = Machine(defersTrustDecision: false, reportsUncleanShutdown: true)
        #expect(machine.channelActive() == .startHandshake)
        #expect(machine.channelActive() == .none)
        #expect(machine.handshakeNeedsMoreData() == .continueHandshake)
        #expect(!machine.deliversApplicationData)
        #expect(machine.handshakeCompleted() == .completeHandshake(startDataFlow: true))
        #expect(machine.deliversApplicationData && machine.encryptsApplicationData)
        #expect(machine.peerApproved() == .none)
        #expect(machine.closeRequested() == .sendCloseNotifyAndClose(deliverHeldData: false))
        #expect(machine.isClosingOrClosed)
        #expect(machine.closeRequested() == .none)
        #expect(machine.channelInactive() == .fireInactive(nil))
    }

    @Test("deferred: data is held until approval")
    func deferredApproval() {
        var machine = Machine(defersTrustDecision: true, reportsUncleanShutdown: true)
        _ = machine.channelActive()
        #expect(machine.handshakeCompleted() == .completeHandshake(startDataFlow: false))
        #expect(machine.decryptsApplicationData)
        #expect(!machine.deliversApplicationData && !machine.encryptsApplicationData)
        #expect(machine.peerApproved() == .startDataFlow)
        #expect(machine.deliversApplicationData && machine.encryptsApplicationData)
    }

    @Test("a close_notify delivers held data only once the peer was approved")
    func closeNotify() {
        var approved = Machine(defersTrustDecision: false, reportsUncleanShutdown: true)
        _ = approved.channelActive()
        _ = approved.handshakeCompleted()
        #expect(approved.closeNotifyReceived() == .sendCloseNotifyAndClose(deliverHeldData: true))
        #expect(approved.closeNotifyReceived() == .none)

        var waiting = Machine(defersTrustDecision: true, reportsUncleanShutdown: true)
        _ = waiting.channelActive()
        _ = waiting.handshakeCompleted()
        #expect(waiting.closeNotifyReceived() == .sendCloseNotifyAndClose(deliverHeldData: false))
    }

    @Test("half-closes: ours keeps reading, the peer's (when allowed) keeps writing; the second half closes")
    func halfCloses() {
        func active() -> Machine {
            var machine = Machine(defersTrustDecision: false, reportsUncleanShutdown: true)
            _ = machine.channelActive()
            _ = machine.handshakeCompleted()
            return machine
        }
        var ours = active()
        #expect(ours.outputCloseRequested() == .sendCloseNotify)
        #expect(ours.isOutputClosed && !ours.isClosingOrClosed)
        #expect(ours.decryptsApplicationData && ours.deliversApplicationData && !ours.encryptsApplicationData)
        #expect(ours.outputCloseRequested() == .none)
        #expect(ours.closeNotifyReceived(halfClosureAllowed: true) == .sendCloseNotifyAndClose(deliverHeldData: true, fireInputClosed: true))
        #expect(ours.isClosingOrClosed)

        var oursThenClose = active()
        _ = oursThenClose.outputCloseRequested()
        #expect(oursThenClose.closeRequested() == .closeChannel, "close_notify is out already")
        var oursThenEOF = active()
        _ = oursThenEOF.outputCloseRequested()
        #expect(oursThenEOF.channelInactive() == .fireInactive(.uncleanShutdown))

        var theirs = active()
        #expect(theirs.closeNotifyReceived(halfClosureAllowed: true) == .deliverHeldDataAndFireInputClosed)
        #expect(theirs.isInputClosed && !theirs.decryptsApplicationData && theirs.encryptsApplicationData)
        #expect(theirs.closeNotifyReceived(halfClosureAllowed: true) == .none)
        #expect(theirs.outputCloseRequested() == .sendCloseNotifyAndClose(deliverHeldData: false))
        var theirsThenEOF = active()
        _ = theirsThenEOF.closeNotifyReceived(halfClosureAllowed: true)
        #expect(theirsThenEOF.channelInactive() == .fireInactive(nil), "the peer closed cleanly")

        var notAllowed = active()
        #expect(notAllowed.closeNotifyReceived(halfClosureAllowed: false) == .sendCloseNotifyAndClose(deliverHeldData: true))

        var handshaking = Machine(defersTrustDecision: true, reportsUncleanShutdown: true)
        #expect(handshaking.outputCloseRequested() == .refuseOutputClose)
        _ = handshaking.channelActive()
        #expect(handshaking.outputCloseRequested() == .refuseOutputClose)
        _ = handshaking.handshakeCompleted()
        #expect(handshaking.outputCloseRequested() == .refuseOutputClose, "awaiting approval")
    }

    @Test("EOF without close_notify is an unclean shutdown only when reported, and during the handshake a failure")
    func eof() {
        var reporting = Machine(defersTrustDecision: false, reportsUncleanShutdown: true)
        _ = reporting.channelActive()
        _ = reporting.handshakeCompleted()
        #expect(reporting.channelInactive() == .fireInactive(.uncleanShutdown))

        var quiet = Machine(defersTrustDecision: false, reportsUncleanShutdown: false)
        _ = quiet.channelActive()
        _ = quiet.handshakeCompleted()
        #expect(quiet.channelInactive() == .fireInactive(nil))

        var handshaking = Machine(defersTrustDecision: false, reportsUncleanShutdown: false)
        _ = handshaking.channelActive()
        #expect(handshaking.channelInactive() == .fireInactive(.handshakeFailed))
    }

    @Test("failures and timeouts close; a timeout after completion is ignored")
    func failures() {
        var failing = Machine(defersTrustDecision: false, reportsUncleanShutdown: true)
        _ = failing.channelActive()
        #expect(failing.handshakeFailed(.peerUntrusted) == .failAndClose(.peerUntrusted))
        #expect(failing.connectionFailed(.connectionFailed) == .none)
        #expect(failing.channelInactive() == .fireInactive(nil))

        var slow = Machine(defersTrustDecision: false, reportsUncleanShutdown: true)
        _ = slow.channelActive()
        #expect(slow.handshakeTimedOut(.handshakeTimeout) == .failAndClose(.handshakeTimeout))

        var late = Machine(defersTrustDecision: false, reportsUncleanShutdown: true)
        _ = late.channelActive()
        _ = late.handshakeCompleted()
        #expect(late.handshakeTimedOut(.handshakeTimeout) == .none)
        #expect(late.connectionFailed(.connectionFailed) == .failAndClose(.connectionFailed))
    }

    @Test("a server's failed handshake lingers for the client's EOF: a close asked for meanwhile waits, data is dropped, the EOF or the timeout ends it")
    func serverLingers() {
        var server = Machine(defersTrustDecision: false, reportsUncleanShutdown: true, lingersAfterFailure: true)
        _ = server.channelActive()
        #expect(server.handshakeFailed(.peerUntrusted) == .failAndLinger(.peerUntrusted))
        #expect(server.isLingering)
        #expect(!server.decryptsApplicationData && !server.isHandshaking && server.isClosingOrClosed)
        #expect(server.closeRequested() == .none)  // the linger's end closes
        #expect(server.outputCloseRequested() == .none)
        #expect(server.connectionFailed(.connectionFailed) == .none)
        #expect(server.lingerEnded() == .closeChannel)
        #expect(!server.isLingering)
        #expect(server.lingerEnded() == .none)
        #expect(server.closeRequested() == .closeChannel)

        var reset = Machine(defersTrustDecision: false, reportsUncleanShutdown: true, lingersAfterFailure: true)
        _ = reset.channelActive()
        _ = reset.handshakeFailed(.peerUntrusted)
        #expect(reset.channelInactive() == .fireInactive(nil))
        #expect(reset.lingerEnded() == .none)

        // A timeout fails the handshake without an alert to deliver: no linger.
        var slow = Machine(defersTrustDecision: false, reportsUncleanShutdown: true, lingersAfterFailure: true)
        _ = slow.channelActive()
        #expect(slow.handshakeTimedOut(.handshakeTimeout) == .failAndClose(.handshakeTimeout))
    }

    @Test("closing before or during the handshake closes without close_notify")
    func earlyClose() {
        var idle = Machine(defersTrustDecision: false, reportsUncleanShutdown: true)
        #expect(idle.closeRequested() == .closeChannel)
        #expect(idle.channelActive() == .none)

        var handshaking = Machine(defersTrustDecision: false, reportsUncleanShutdown: true)
        _ = handshaking.channelActive()
        #expect(handshaking.closeRequested() == .closeChannel)
        #expect(handshaking.closeRequested() == .closeChannel)
    }
}
