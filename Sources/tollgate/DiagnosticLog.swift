import Logging
import TollgatePolicy

/// The diagnostic log (`log.level`): swift-log to standard error, messages below the configured
/// level dropped. Trust events (`tollgate.trust`: refusals, pin reports, `insecure` connections)
/// and interception (`tollgate.interception`) log through it; the access log is separate
/// (`log.access`), and start-up problems and warnings are always written.
enum DiagnosticLog {
    /// Sets the level for the whole process. swift-log allows this once, so it happens at start-up
    /// and a reload does not change it.
    static func bootstrap(level: PolicyConfiguration.Log.Level) {
        let threshold = Logger.Level(level)
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = threshold
            return handler
        }
    }
}

extension Logger.Level {
    /// The swift-log level named like the configuration's.
    init(_ level: PolicyConfiguration.Log.Level) {
        switch level {
        case .trace: self = .trace
        case .debug: self = .debug
        case .info: self = .info
        case .notice: self = .notice
        case .warning: self = .warning
        case .error: self = .error
        case .critical: self = .critical
        }
    }
}
