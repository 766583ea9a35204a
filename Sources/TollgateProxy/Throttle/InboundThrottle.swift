import NIOCore

/// What a throttled listener (`listen[].throttle`) does with the bytes a client sends: each piece
/// is held until a link of `rate` bytes a second would have carried it, then `latency` more, and
/// reading stops while more than ``highWater`` bytes are held — the kernel's receive buffer then
/// fills and TCP slows the client down, as a slow uplink would.
///
/// Pure: events in (with the time), actions out; ``InboundThrottleHandler`` runs it.
struct InboundThrottle {
    /// What to do after an event, in this order: pass the bytes on, pass the ends on, ask the
    /// channel for more, wake up at a time.
    struct Actions {
        var deliver: [ByteBuffer] = []
        var ends: [End] = []
        var read = false
        var wakeUp: NIODeadline?
    }

    /// An event that must follow the bytes before it.
    enum End: Equatable {
        /// The client closed its side (`ChannelEvent.inputClosed`).
        case inputClosed
        /// The connection is gone: everything held is passed on at once, as no answer can
        /// reach the client any more and the pipeline is about to be taken apart.
        case inactive
    }

    /// Bytes a second, nil: not limited.
    let rate: Int64?
    let latency: TimeAmount
    /// The most bytes held before reading stops.
    let highWater: Int
    /// The largest piece passed on at once: a rate's 20 ms, so that bytes trickle as on a link.
    let sliceSize: Int

    private var held = CircularBuffer<(bytes: ByteBuffer, due: NIODeadline)>()
    private(set) var heldBytes = 0
    /// When the link has carried everything received so far.
    private var linkFree = NIODeadline.uptimeNanoseconds(0)
    /// A read the channel asked for and was not given yet.
    private var readWanted = false
    private var endsHeld: [End] = []
    /// The wake-up already asked for.
    private var wakeUp: NIODeadline?

    init(rate: Int64?, latency: TimeAmount) {
        self.rate = rate
        self.latency = latency
        if let rate {
            // A quarter second of the rate, and what is in flight during the latency.
            let inFlight = Int(min(Int64(1) << 30, rate * max(latency.nanoseconds, 0) / 1_000_000_000))
            highWater = max(16 << 10, Int(rate / 4) + inFlight)
            sliceSize = Int(min(max(rate / 50, 512), 16 << 10))
        } else {
            highWater = 1 << 20
            sliceSize = .max
        }
    }

    /// Bytes from the client.
    mutating func received(_ bytes: ByteBuffer, at now: NIODeadline) -> Actions {
        var bytes = bytes
        while bytes.readableBytes > 0 {
            let count = min(bytes.readableBytes, sliceSize)
            guard let slice = bytes.readSlice(length: count) else { break }
            var carried = now
            if let rate {
                // The slice's last byte has crossed the link once the link is free and the
                // slice's time at the rate has passed.
                carried = max(now, linkFree) + .nanoseconds(Int64(count) * 1_000_000_000 / rate)
                linkFree = carried
            }
            held.append((slice, carried + latency))
            heldBytes += count
        }
        return release(at: now)
    }

    /// The channel asks for more bytes (its `read`).
    mutating func readRequested(at now: NIODeadline) -> Actions {
        readWanted = true
        return release(at: now)
    }

    /// The wake-up asked for has come.
    mutating func wokeUp(at now: NIODeadline) -> Actions {
        wakeUp = nil
        return release(at: now)
    }

    /// The client closed its side, or the connection is gone.
    mutating func ended(_ end: End, at now: NIODeadline) -> Actions {
        endsHeld.append(end)
        return release(at: now, all: end == .inactive)
    }

    /// Passes on what is due (everything with `all`), the ends once nothing is held before them,
    /// a read wanted once below ``highWater``; wakes up when the next piece is due.
    private mutating func release(at now: NIODeadline, all: Bool = false) -> Actions {
        var actions = Actions()
        while let first = held.first, all || first.due <= now {
            held.removeFirst()
            heldBytes -= first.bytes.readableBytes
            actions.deliver.append(first.bytes)
        }
        if held.isEmpty {
            actions.ends = endsHeld
            endsHeld = []
        }
        if readWanted, heldBytes < highWater, endsHeld.isEmpty {
            readWanted = false
            actions.read = true
        }
        if let next = held.first?.due, wakeUp.map({ next < $0 }) ?? true {
            wakeUp = next
            actions.wakeUp = next
        }
        return actions
    }
}
