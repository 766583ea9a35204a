import Foundation
import Testing
import TollgateTesting

/// A wheel of one module, `tgdemo` 1.0, built by Python's zipfile: what pip downloads.
func makeWheel(python: String, at path: String) async throws -> [UInt8] {
    let script = """
        import base64, hashlib, sys, zipfile
        files = {
            "tgdemo/__init__.py": b"VERSION = '1.0'\\n",
            "tgdemo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\\nName: tgdemo\\nVersion: 1.0\\n",
            "tgdemo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
        }
        record = []
        for name, data in files.items():
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
        record.append("tgdemo-1.0.dist-info/RECORD,,")
        files["tgdemo-1.0.dist-info/RECORD"] = ("\\n".join(record) + "\\n").encode()
        with zipfile.ZipFile(sys.argv[1], "w") as wheel:
            for name, data in files.items():
                wheel.writestr(name, data)
        """
    let made = try await ChildProcess.run(python, ["-c", script, path])
    #expect(made.status == 0, "\(made.stderr)")
    return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
}
