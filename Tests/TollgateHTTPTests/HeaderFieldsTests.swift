import Testing
import TollgateHTTP

@Suite("Header fields: order, duplicates and case-insensitive lookup by name key")
struct HeaderFieldsTests {
    private let sample = HeaderFields([
        ("Host", "example.com"), ("Accept", "a"), ("X-Twice", "1"), ("accept", "b"), ("x-twice", "2"), ("ACCEPT", "c"),
    ])

    @Test("Names that differ only in ASCII case have one key; other names (even anagrams) have others")
    func nameKeys() {
        let key = HeaderFields.Field.nameKey(of: "Content-Type")
        #expect(HeaderFields.Field.nameKey(of: "content-type") == key)
        #expect(HeaderFields.Field.nameKey(of: "CONTENT-TYPE") == key)
        #expect(HeaderFields.Field.nameKey(of: "Content-Typf") != key)
        #expect(HeaderFields.Field.nameKey(of: "Type-Content") != key)
        #expect(HeaderFields.Field.nameKey(of: "Content-Type ") != key)
    }

    @Test("Lookups ignore ASCII case and keep the order of the lines")
    func lookups() {
        #expect(sample["accept"] == "a")
        #expect(sample.values(for: "Accept") == ["a", "b", "c"])
        #expect(sample.values(for: "x-TWICE") == ["1", "2"])
        #expect(sample.values(for: "Missing").isEmpty)
        #expect(sample.contains("HOST"))
        #expect(!sample.contains("Hos"))
        #expect(sample.contains { $0.value == "2" })
        #expect(!sample.contains { $0.value == "3" })
    }

    @Test("A name with the same key as another but different letters is not taken for it")
    func keyCollisionsAreCheckedByName() {
        // Whatever the hash, lookups compare the names too: a field is found only by its own name.
        var fields = HeaderFields()
        for index in 0..<500 { fields.add(name: "X-\(index)", value: "\(index)") }
        for index in 0..<500 { #expect(fields["x-\(index)"] == "\(index)") }
        #expect(fields["X-500"] == nil)
    }

    @Test("replaceOrAdd keeps the first line's place, drops the later ones, or appends")
    func replaceOrAdd() {
        var fields = sample
        fields.replaceOrAdd(name: "accept", value: "z")
        #expect(fields.pairs.map(\.0) == ["Host", "Accept", "X-Twice", "x-twice"])
        #expect(fields.values(for: "Accept") == ["z"])
        fields.replaceOrAdd(name: "Via", value: "1.1 tollgate")
        #expect(fields.pairs.last! == ("Via", "1.1 tollgate"))
        fields["x-twice"] = nil
        #expect(!fields.contains("X-Twice"))
        #expect(fields.count == 3)
    }

    @Test("remove and removeAll(where:) drop every matching line and keep the rest in order")
    func removal() {
        var fields = sample
        fields.remove("ACCEPT")
        #expect(fields.pairs.map(\.1) == ["example.com", "1", "2"])
        fields.removeAll { $0.value == "1" }
        #expect(fields.pairs.map(\.1) == ["example.com", "2"])
        fields.remove("Missing")
        #expect(fields.count == 2)
    }

    @Test("Renaming a field line moves its key with it")
    func renaming() {
        var field = HeaderFields.Field(name: "Old-Name", value: "v")
        field.name = "New-Name"
        #expect(field.nameKey == HeaderFields.Field.nameKey(of: "new-name"))
        #expect(field == HeaderFields.Field(name: "New-Name", value: "v"))
    }

    @Test("The wire form is every line as name: value CRLF, in order, exactly wireSize bytes")
    func wireForm() {
        let fields = HeaderFields([("Content-Type", "text/plain; charset=utf-8"), ("X-Ünïcode", "wert ✓"), ("Empty", "")])
        let bytes = [UInt8](unsafeUninitializedCapacity: fields.wireSize) { buffer, count in
            count = fields.writeWire(to: UnsafeMutableRawBufferPointer(buffer))
        }
        #expect(bytes.count == fields.wireSize)
        #expect(String(decoding: bytes, as: UTF8.self) == "Content-Type: text/plain; charset=utf-8\r\nX-Ünïcode: wert ✓\r\nEmpty: \r\n")
        #expect(HeaderFields().wireSize == 0)
    }

    @Test("allValues(for:equal:) holds when every line of the name has the value, or there is none")
    func allValuesEqual() {
        let same = HeaderFields([("Content-Length", "5"), ("X", "1"), ("content-length", "5")])
        let differ = HeaderFields([("Content-Length", "5"), ("content-length", "6")])
        #expect(same.allValues(for: "Content-Length", equal: "5"))
        #expect(!same.allValues(for: "Content-Length", equal: "6"))
        #expect(!differ.allValues(for: "content-length", equal: "5"))
        #expect(HeaderFields().allValues(for: "Content-Length", equal: "5"))
    }
}
