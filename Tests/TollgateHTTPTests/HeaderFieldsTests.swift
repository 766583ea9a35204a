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

    @Test("removeAll(keepingCapacity:) empties the list, lookups included, and leaves a copy as it was")
    func removingEverything() {
        var fields = sample
        let copy = fields
        fields.removeAll(keepingCapacity: true)
        #expect(fields.isEmpty && fields.count == 0 && fields.wireSize == 0)
        #expect(!fields.contains("Accept") && fields["Host"] == nil)
        #expect(fields == HeaderFields())
        #expect(copy == sample)
        fields.add(name: .via, value: "1.1 tollgate")
        #expect(fields.pairs.map(\.0) == ["Via"] && fields.contains(.via) && !fields.contains("Accept"))
    }

    @Test("append(contentsOf:) adds another list's lines in order, lookups included, and leaves a copy as it was")
    func appendingLists() {
        var fields: HeaderFields = ["Host": "example.com"]
        let copy = fields
        var added = HeaderFields()
        added.add(name: .via, value: "1.1 tollgate")
        added.add(name: "X-Forwarded-For", value: "127.0.0.1")
        fields.append(contentsOf: added)
        fields.append(contentsOf: HeaderFields())
        #expect(fields.pairs.map(\.0) == ["Host", "Via", "X-Forwarded-For"] && fields.count == 3)
        #expect(fields[.via] == "1.1 tollgate" && fields["x-forwarded-for"] == "127.0.0.1")
        #expect(fields.wireSize == copy.wireSize + added.wireSize)
        #expect(copy.count == 1 && !copy.contains(.via))
        fields.remove(.via)
        #expect(fields.pairs.map(\.0) == ["Host", "X-Forwarded-For"] && added.contains(.via))
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

    @Test("Lines added as bytes keep their bytes exactly, obs-text included, and read back as strings")
    func bytesKeptExactly() {
        var fields = HeaderFields()
        let name: [UInt8] = Array("X-Raw".utf8)
        let value: [UInt8] = [0x61, 0xE9, 0x62]  // "a", obs-text 0xE9 (not UTF-8), "b"
        name.withUnsafeBytes { name in value.withUnsafeBytes { fields.add(name: name, value: $0) } }
        fields.add(name: "Next", value: "1")
        let wire = [UInt8](unsafeUninitializedCapacity: fields.wireSize) { buffer, count in
            count = fields.writeWire(to: UnsafeMutableRawBufferPointer(buffer))
        }
        #expect(wire == Array("X-Raw: ".utf8) + value + Array("\r\nNext: 1\r\n".utf8))
        #expect(fields["x-raw"] == "a\u{FFFD}b")
        #expect(fields.contains("X-RAW"))
    }

    @Test("Writing while omitting lines copies the kept runs in order, and its size is exact")
    func wireOmitting() {
        let fields = HeaderFields([("A", "1"), ("Drop", "x"), ("B", "2"), ("C", "3"), ("drop", "y"), ("D", "4")])
        let omits: (HeaderFields.Line) -> Bool = { $0.isNamed("DROP") }
        let size = fields.wireSize(omitting: omits)
        let wire = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = fields.writeWire(to: UnsafeMutableRawBufferPointer(buffer), omitting: omits)
        }
        #expect(String(decoding: wire, as: UTF8.self) == "A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n")
        #expect(wire.count == size)
        let none = fields.wireSize(omitting: { _ in true })
        #expect(none == 0)
    }

    @Test("Lists with the same lines are equal and hash alike, however they were made")
    func equalityAfterChanges() {
        var changed = HeaderFields([("A", "1"), ("B", "long value that is not a small string"), ("C", "3")])
        changed.remove("b")
        changed.replaceOrAdd(name: "A", value: "one")
        changed.add(name: "D", value: "4")
        let built = HeaderFields([("A", "one"), ("C", "3"), ("D", "4")])
        #expect(changed == built)
        #expect(changed.hashValue == built.hashValue)
        #expect(changed.wireSize == built.wireSize)
        #expect(changed != HeaderFields([("A", "one"), ("C", "3"), ("d", "4")]))
        var copy = changed
        copy.add(name: "E", value: "5")
        #expect(changed.count == 3 && copy.count == 4)  // a copy changes alone
    }

    @Test("removeLines and containsLine see each line's key, name and value bytes")
    func lineWalks() {
        var fields = sample
        #expect(fields.containsLine { $0.isNamed("x-twice") && $0.valueString == "2" })
        #expect(!fields.containsLine { $0.valueString == "9" })
        fields.removeLines { $0.nameKey == HeaderFields.Field.nameKey(of: "accept") && $0.isNamed("Accept") }
        #expect(fields.pairs.map(\.0) == ["Host", "X-Twice", "x-twice"])
        var names: [String] = []
        fields.forEachLine { names.append($0.nameString) }
        #expect(names == ["Host", "X-Twice", "x-twice"])
    }

    @Test("contentLength: the value when every Content-Length line agrees and it is a number ≥ 0")
    func contentLength() {
        #expect(HeaderFields([("Content-Length", "42")]).contentLength == 42)
        #expect(HeaderFields([("content-length", "7"), ("X", "1"), ("Content-Length", "7")]).contentLength == 7)
        #expect(HeaderFields([("Content-Length", "7"), ("Content-Length", "8")]).contentLength == nil)
        #expect(HeaderFields([("Content-Length", "-1")]).contentLength == nil)
        #expect(HeaderFields([("Content-Length", "abc")]).contentLength == nil)
        #expect(HeaderFields([("Content-Lengthy", "5")]).contentLength == nil)
        #expect(HeaderFields().contentLength == nil)
        #expect(HeaderFields([("Content-Length", "+5")]).contentLength == nil)
        #expect(HeaderFields([("Content-Length", "")]).contentLength == nil)
        #expect(HeaderFields([("Content-Length", "0")]).contentLength == 0)
        #expect(HeaderFields([("Content-Length", "999999999999999999")]).contentLength == 999_999_999_999_999_999)
        #expect(HeaderFields([("Content-Length", "9999999999999999999")]).contentLength == nil)
        #expect(HeaderFields([("Content-Length", "0042")]).contentLength == 42)
    }

    @Test("A HeaderName finds, changes and removes what its text as a String would, ignoring case")
    func headerNamesActLikeTheirText() {
        var fields = HeaderFields([
            ("transfer-encoding", "gzip"), ("Via", "1.0 a"), ("TRANSFER-ENCODING", "chunked"), ("Host", "h"),
        ])
        #expect(HeaderName.transferEncoding.key == HeaderFields.Field.nameKey(of: "transfer-encoding"))
        #expect(fields[.transferEncoding] == "gzip")
        #expect(fields.values(for: .transferEncoding) == fields.values(for: "Transfer-Encoding"))
        #expect(fields.count(named: .transferEncoding) == 2)
        #expect(fields.listContains(.transferEncoding, token: "CHUNKED"))
        #expect(!fields.contains(.xForwardedFor))
        var seen: [String] = []
        fields.forEachValue(named: .via) { seen.append($0) }
        #expect(seen == ["1.0 a"])

        #expect(fields.take(.host) == "h")
        #expect(!fields.contains("host"))
        #expect(fields.take(.host) == nil)
        fields[.via] = "1.1 b"
        #expect(fields.values(for: "via") == ["1.1 b"])
        fields.add(name: .xForwardedProto, value: "http")
        #expect(fields.pairs.last! == ("X-Forwarded-Proto", "http"))
        #expect(fields["x-forwarded-proto"] == "http")
        fields.remove(.transferEncoding)
        #expect(fields.pairs.map(\.0) == ["Via", "X-Forwarded-Proto"])
        fields[.via] = nil
        #expect(fields.count == 1)
    }

    @Test("HeaderNames are equal by name ignoring case, and a constant's text is its name")
    func headerNameEquality() {
        #expect(HeaderName("cache-control") == .cacheControl)
        #expect(HeaderName("Cache-Controls") != .cacheControl)
        #expect(HeaderName.xForwardedHost.text == "X-Forwarded-Host")
        #expect(Set([HeaderName("VARY"), .vary]).count == 1)
    }

    @Test("The key mask answers absent names without a walk, and stays right through removals of lines sharing a bit")
    func keyMaskFollowsChanges() {
        let bit = { (name: String) in HeaderFields.keyBit(HeaderFields.Field.nameKey(of: name)) }
        // Two names whose keys share a mask bit: removing one must not hide the other.
        let first = "Accept"
        let partner = (0..<10_000).lazy.map { "X-Partner-\($0)" }.first { bit($0) == bit(first) }!
        var fields = HeaderFields()
        #expect(!fields.mayContainKey(in: bit(first)))
        fields.add(name: first, value: "a")
        fields.add(name: partner, value: "p")
        fields.add(name: "Host", value: "h")
        #expect(fields.mayContainKey(in: bit(first)))
        fields.remove(first)
        #expect(fields.mayContainKey(in: bit(partner)))
        #expect(fields[partner] == "p")
        #expect(fields[first] == nil)
        fields.remove(partner)
        #expect(!fields.mayContainKey(in: bit(partner)) || bit(partner) == bit("Host"))
        #expect(fields.values(for: partner).isEmpty && fields.count(named: first) == 0)
        #expect(fields["host"] == "h")
        fields.removeLines { _ in true }
        #expect(!fields.mayContainKey(in: ~0))
        fields["Vary"] = "x"
        #expect(fields.mayContainKey(in: bit("vary")) && fields.listContains("VARY", token: "X"))
    }

    @Test("A HeaderNameList is found by any of its names, ignoring case, and not by others")
    func headerNameLists() {
        let list = HeaderNameList([.ifNoneMatch, .ifModifiedSince, HeaderName("If-Range")])
        #expect(!HeaderFields().containsAny(of: list))
        #expect(!HeaderFields([("Host", "h"), ("If-Match", "x"), ("If-Ranges", "y")]).containsAny(of: list))
        #expect(HeaderFields([("Host", "h"), ("if-range", "x")]).containsAny(of: list))
        #expect(HeaderFields([("IF-MODIFIED-SINCE", "x")]).containsAny(of: list))
        var fields = HeaderFields([("If-None-Match", "*"), ("Accept", "a")])
        #expect(fields.containsAny(of: list))
        fields.remove(.ifNoneMatch)
        #expect(!fields.containsAny(of: list))
        #expect(list.keyMask == list.names.reduce(0) { $0 | HeaderFields.keyBit($1.key) })
    }
}

