import Foundation

/// `tollgate warm`'s live display on a terminal's standard error: the URLs done and the bytes
/// received in all, then one line per active transfer (its name, bytes of total, rate and time
/// left), redrawn in place four times a second and cleared at the end.
final class WarmProgressDisplay: @unchecked Sendable {
    /// `--progress`.
    enum Mode: String, CaseIterable, Sendable {
        /// On when standard error is a terminal.
        case auto
        case always
        case never

        /// Whether the display runs, given whether standard error is a terminal.
        func isOn(terminal: Bool) -> Bool {
            switch self {
            case .auto: terminal
            case .always: true
            case .never: false
            }
        }
    }

    private let tracker: WarmTracker
    /// The URLs to warm in all (under `lock`).
    private var urlCount: Int
    private let done: @Sendable () -> Int
    private let lock = NSLock()
    private var linesDrawn = 0
    private var timer: (any DispatchSourceTimer)?
    /// The most transfer lines drawn (the rest are summed up in one line).
    static let maximumLines = 8

    init(tracker: WarmTracker, urlCount: Int, done: @escaping @Sendable () -> Int) {
        self.tracker = tracker
        self.urlCount = urlCount
        self.done = done
    }

    /// Sets the URLs to warm in all, once known: a lockfile's files are, once its index pages are read.
    func setURLCount(_ count: Int) {
        lock.lock()
        defer { lock.unlock() }
        urlCount = count
    }

    func start() {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now(), repeating: .milliseconds(250))
        timer.setEventHandler { [weak self] in self?.draw() }
        self.timer = timer
        timer.resume()
    }

    /// Stops redrawing and clears what was drawn.
    func stop() {
        timer?.cancel()
        timer = nil
        lock.lock()
        defer { lock.unlock() }
        write(erase())
        linesDrawn = 0
    }

    private func draw() {
        lock.lock()
        defer { lock.unlock() }
        let lines = Self.render(
            done: done(), of: urlCount, received: tracker.totalWritten, active: tracker.active, now: Date(), width: Self.terminalWidth()
        )
        write(erase() + lines.map { $0 + "\n" }.joined())
        linesDrawn = lines.count
    }

    /// Moves up over the lines drawn and clears to the end of the screen.
    private func erase() -> String {
        linesDrawn > 0 ? "\u{1B}[\(linesDrawn)F\u{1B}[J" : ""
    }

    private func write(_ text: String) {
        guard !text.isEmpty else { return }
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// The lines of the display (pure, for tests).
    static func render(done: Int, of total: Int, received: Int64, active: [WarmTracker.Transfer], now: Date, width: Int) -> [String] {
        var lines = ["tollgate warm: \(done) of \(total) URLs done, \(Self.bytes(received)) received, \(active.count) active"]
        for transfer in active.prefix(maximumLines) {
            var line = "  " + Self.shortName(transfer.name, width: max(20, width / 2))
            line += "  " + Self.bytes(transfer.written) + (transfer.total >= 0 ? " of " + Self.bytes(transfer.total) : "")
            let elapsed = now.timeIntervalSince(transfer.firstSeen)
            let moved = transfer.written - (transfer.baseline ?? 0)
            if elapsed >= 0.5, moved > 0 {
                let rate = Double(moved) / elapsed
                line += "  " + Self.bytes(Int64(rate)) + "/s"
                if transfer.total > transfer.written {
                    line += "  " + Self.duration(Double(transfer.total - transfer.written) / rate) + " left"
                }
            }
            lines.append(String(line.prefix(max(width, 40))))
        }
        if active.count > maximumLines { lines.append("  … and \(active.count - maximumLines) more") }
        return lines
    }

    /// The last path segment, or the URL cut to `width` from the left.
    static func shortName(_ url: String, width: Int) -> String {
        let name = url.split(separator: "/").last.map(String.init) ?? url
        return name.count <= width ? name : "…" + name.suffix(width - 1)
    }

    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "?" }
        let total = Int(seconds.rounded(.up))
        if total < 60 { return "\(total) s" }
        if total < 3600 { return "\(total / 60) min \(total % 60) s" }
        return "\(total / 3600) h \(total % 3600 / 60) min"
    }

    private static func terminalWidth() -> Int {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }
}
