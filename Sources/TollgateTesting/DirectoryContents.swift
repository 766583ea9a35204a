public import Foundation

/// Every file under `path` (names relative to it) with its bytes, but those named in `excluding`:
/// to show that something left a directory as it was.
public func directoryContents(_ path: String, excluding: Set<String> = []) throws -> [String: Data] {
    var files: [String: Data] = [:]
    guard let enumerator = FileManager.default.enumerator(atPath: path) else { return files }
    while let name = enumerator.nextObject() as? String {
        var isDirectory: ObjCBool = false
        let full = path + "/" + name
        guard !excluding.contains(name), FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue
        else { continue }
        files[name] = try Data(contentsOf: URL(fileURLWithPath: full))
    }
    return files
}
