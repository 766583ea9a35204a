import Foundation

// The command line grows with the proxy (CONTRACT.md); until `serve` exists it says so and fails.
FileHandle.standardError.write(Data("tollgate: no command is available in this build yet\n".utf8))
exit(2)
