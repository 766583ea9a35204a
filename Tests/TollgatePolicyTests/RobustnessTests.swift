import Foundation
import Testing
import TollgatePolicy

/// Malformed input of every kind gives problems, never a crash, a hang or a stack trace.
@Suite(.timeLimit(.minutes(1)))
struct RobustnessTests {
    static let malformed: [String] = [
        "",
        "\n\n# only a comment\n",
        "~",
        "just a string",
        "42",
        "[1, 2, 3]",
        "listen:",
        "listen: ~\nhosts: ~\nsessions: ~",
        "listen: [~, 1, [], {}]",
        "hosts: [~, 1, [], {}, {match: ~}, {match: [~, 1, []]}]",
        "sessions: { default: ~, '': {}, 'a b': {}, x: [] }",
        "access: { clients: ~, connect-ports: ~, destinations: [~, {}, {allow: ~}], users: [~, {}] }",
        "cache: { max-size: ~, kind: ~, path: '' }",
        "limits: { max-headers: 99999999999999999999999, max-header-bytes: 99999999TiB }",
        "limits: { header-read-timeout: 99999999999999999999d }",
        "log: { access: ~, format: [], level: {} }",
        "log: { access: off }",
        "---\nlisten: []\n---\nhosts: []\n",
        "listen: !!binary aGVsbG8=",
        "hosts: [ !custom {match: a} ]",
        "? [a, b]\n: c\n",
        "[a, b]: c\n",
        "*x: 1\n",
        "a: *undefined\n",
        "a: &x 1\nb: *x\n",
        "defaults: &d {redirects: follow}\nsessions: {ci: {<<: *d, cookies: jar}}\n",
        "sessions: {ci: {<<: 5}}\n",
        "hosts:\n  - match: *.example.com\n",
        "listen:\n  - address: '127.0.0.1:3128\n",
        "listen:\n  - address: \"unterminated\n",
        "\t\t\n\tlisten: []",
        "a: b: c",
        "a:\n  - b\n  c: d\n",
        "%YAML 9.9\n---\na: 1\n",
        "\u{FEFF}listen: []",
        "listen:\n  - address: \"\\u0000:1\"\n",
        "hosts:\n  - match: \"\u{0}\"\n",
        String(repeating: "[", count: 100_000),
        String(repeating: "{a: ", count: 10_000),
        String(repeating: "- ", count: 10_000) + "x",
        (0..<300).map { String(repeating: " ", count: $0) + "a\($0):" }.joined(separator: "\n"),
        String(repeating: "x", count: 2 << 20),
    ]

    @Test(arguments: 0..<RobustnessTests.malformed.count)
    func malformedInputGivesProblemsAndNeverCrashes(index: Int) {
        let problems = PolicyLoader(checkFiles: true)
            .problems(inYAML: RobustnessTests.malformed[index], file: "f.yaml", baseDirectory: "/nonexistent")
        for problem in problems {
            #expect(problem.description.hasPrefix("f.yaml:\(problem.line): "))
            #expect(problem.line >= 1)
            #expect(!problem.message.contains("\n"))
        }
    }

    @Test func nestedAliasesAreBoundedInsteadOfExpanded() {
        var yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1..<10 {
            let aliases = Array(repeating: "*a\(level - 1)", count: 10).joined(separator: ", ")
            yaml += "a\(level): &a\(level) [\(aliases)]\n"
        }
        let problems = Fixture.problems(yaml)
        #expect(problems == ["t.yaml:1: (document): more than 100000 values once aliases are expanded"])
        let asKey = yaml + "*a9 : 1\n"
        #expect(Fixture.problems(asKey) == ["t.yaml:11: (yaml): an alias cannot be a key; a key is a plain string"])
    }

    @Test func deepNestingIsRefusedBeforeParsing() {
        #expect(
            Fixture.problems(String(repeating: "[", count: 1000)) == [
                "t.yaml:1: (yaml): brackets nested more than 64 deep; nesting that deep is refused"
            ]
        )
    }

    @Test func quotedTextIsNotMistakenForStructure() {
        let yaml = """
            sessions:
              default:
                headers: { X-A: "[[[[ *not: an alias ]]]] \\" still quoted: [", X-B: 'it''s [ fine' }
            hosts:
              - match: "*.example.com"   # a quoted wildcard; [[[ in a comment
                credentials:
                  - realm: Bob's [realm
                    user: bob
                    password-env: BOB
            """
        #expect(Fixture.problems(yaml).isEmpty)
    }

    @Test func mutationsOfARealFileNeverCrash() throws {
        let path = Fixture.repositoryRoot + "/conf/pinning-gateway.yaml"
        let original = Array(try String(contentsOfFile: path, encoding: .utf8).utf8)
        var random = SplitMix64(seed: 0x70_11_6a_7e)
        let alphabet = Array(" \n\t:-[]{},#&*!|>'\"%@`?~0123456789abcsha256/=".utf8)
        let loader = PolicyLoader(checkFiles: true)
        for _ in 0..<300 {
            var bytes = original
            for _ in 0..<(1 + Int(random.next() % 4)) {
                let position = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 3 {
                case 0: bytes.remove(at: position)
                case 1: bytes.insert(alphabet[Int(random.next() % UInt64(alphabet.count))], at: position)
                default: bytes[position] = alphabet[Int(random.next() % UInt64(alphabet.count))]
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            for problem in loader.problems(inYAML: text, file: "m.yaml", baseDirectory: "/nonexistent") {
                #expect(problem.line >= 1)
            }
        }
    }

    @Test func aFileThatIsNotUTF8IsOneProblem() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/latin1.yaml"
        #expect(FileManager.default.createFile(atPath: path, contents: Data([0x61, 0x3A, 0x20, 0xE9, 0x0A])))
        #expect(PolicyLoader().problems(inFile: path).map(\.description) == ["\(path):1: (file): not UTF-8 text"])
        #expect(
            PolicyLoader().problems(inFile: directory).map(\.description) == [
                "\(directory):1: (file): cannot read the file: is a directory"
            ]
        )
    }
}

/// A small deterministic generator for the mutation test.
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
