import Foundation
import Testing
import TollgateStore

@Suite("StoreCodable")
struct StoreCodableTests {
    @Test("String, byte array, UInt64 and Data round-trip as keys and values")
    func roundTrips() throws {
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "values")
            let bytes: [UInt8] = [0, 1, 2, 255]
            let data = Data([9, 8, 7])
            try environment.write { txn throws in
                try txn.put("string", "héllo wörld", in: db)
                try txn.put(bytes, bytes, in: db)
                try txn.put(UInt64(7), UInt64.max, in: db)
                try txn.put(data, data, in: db)
                try txn.put("empty", [UInt8](), in: db)
            }
            try environment.read { txn throws in
                #expect(try txn.get("string", as: String.self, in: db) == "héllo wörld")
                #expect(try txn.get(bytes, as: [UInt8].self, in: db) == bytes)
                #expect(try txn.get(UInt64(7), as: UInt64.self, in: db) == UInt64.max)
                #expect(try txn.get(data, as: Data.self, in: db) == data)
                #expect(try txn.get("empty", as: [UInt8].self, in: db) == [])
            }
        }
    }

    @Test("UInt64 encodes big-endian, so keys sort numerically")
    func bigEndian() throws {
        #expect(UInt64(0x0102).withStoreBytes { Array($0) } == [0, 0, 0, 0, 0, 0, 1, 2])
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "numbers")
            let numbers: [UInt64] = [256, 1, 65_536, 255, 2, 1 << 40]
            try environment.write { txn throws in
                for number in numbers { try txn.put(number, "n", in: db) }
            }
            let keys = try environment.read { txn throws in
                try txn.entries(in: db).map { (entry: (key: UInt64, value: String)) in entry.key }
            }
            #expect(keys == numbers.sorted())
        }
    }

    @Test("Decoding a UInt64 from bytes of the wrong length throws invalidValue")
    func invalidUInt64() throws {
        #expect(throws: StoreError.invalidValue) {
            try [UInt8](repeating: 1, count: 3).withUnsafeBytes { try UInt64(storeBytes: $0) }
        }
        try withEnvironment { environment throws in
            let db = try environment.openDatabase(named: "values")
            try environment.write { try $0.put("short", "abc", in: db) }
            #expect(throws: StoreError.invalidValue) {
                try environment.read { try $0.get("short", as: UInt64.self, in: db) }
            }
        }
    }
}
