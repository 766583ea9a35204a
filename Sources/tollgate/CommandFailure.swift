/// A failure a command reports in one line (`tollgate: MESSAGE` on standard error) with its
/// exit code.
struct CommandFailure: Error {
    /// Bad arguments, an address in use, an unsupported option: the user can fix it.
    static let userErrorCode: Int32 = 1
    /// Something that should not happen.
    static let internalErrorCode: Int32 = 2

    let message: String
    let exitCode: Int32

    /// A user error (exit code 1).
    static func user(_ message: String) -> CommandFailure {
        CommandFailure(message: message, exitCode: userErrorCode)
    }
}
