// The policy loader (YAML text → PolicyConfiguration, or every problem found) fed arbitrary
// text, as `tollgate check-config` or a reload would read a file someone edited.
//
// Invariants:
// - the answer is a policy or a non-empty problem list, never a crash, and the same both times
//   it is asked (`load` and `problems(inYAML:)` agree);
// - problems are in line order, each on a line of the document (1 … lines + 1) with a key and a
//   message, and name the file they were asked about.
import FuzzSupport
import TollgatePolicy

let loader = PolicyLoader(checkFiles: false, homeDirectory: "/home/fuzz")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPolicyLoader(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let yaml = FuzzInput(start, count).text
    let problems = loader.problems(inYAML: yaml, file: "fuzz.yaml", baseDirectory: nil)
    var loaded: PolicyConfiguration?
    var failure: PolicyLoader.Failure?
    do {
        loaded = try loader.load(yaml: yaml, file: "fuzz.yaml", baseDirectory: nil)
    } catch {
        failure = error
    }
    fuzzCheck((loaded == nil) == (failure != nil), "neither a policy nor a failure")
    if let failure {
        fuzzCheck(!failure.problems.isEmpty, "a failure without a problem")
        fuzzCheck(failure.problems == problems, "load found \(failure.problems), problems(inYAML:) \(problems)")
    } else {
        fuzzCheck(problems.isEmpty, "a policy loaded although problems(inYAML:) found \(problems)")
    }
    // An upper bound: YAML also breaks lines at CR, NEL, LS and PS (a CRLF counts twice here).
    let lines = yaml.unicodeScalars.reduce(1) {
        $0 + ("\n\r\u{85}\u{2028}\u{2029}".unicodeScalars.contains($1) ? 1 : 0)
    }
    for problem in problems {
        fuzzCheck(problem.file == "fuzz.yaml", "problem names file '\(problem.file)'")
        fuzzCheck((1...lines + 1).contains(problem.line), "problem on line \(problem.line) of \(lines): \(problem)")
        fuzzCheck(!problem.key.isEmpty && !problem.message.isEmpty, "a problem without a key or message: \(problem)")
    }
    fuzzCheck(problems.map(\.line) == problems.map(\.line).sorted(), "problems out of line order: \(problems)")
    return 0
}

/// The executable's entry point: libFuzzer's driver, calling ``fuzzPolicyLoader(_:_:)`` for each input.
@main
enum Main {
    static func main() { runLibFuzzer(fuzzPolicyLoader) }
}
