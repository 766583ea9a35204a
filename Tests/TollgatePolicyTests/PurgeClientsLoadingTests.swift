import Testing
import TollgatePolicy

@Suite("access.purge-clients: read from the file")
struct PurgeClientsLoadingTests {
    @Test("A list of CIDRs; unset, a PURGE is nobody's to answer; a bad CIDR names its line")
    func purgeClients() throws {
        let configuration = try Fixture.load("access:\n  purge-clients: [\"127.0.0.1/32\", \"10.1.0.0/16\"]\n")
        #expect(configuration.access.purgeClients.count == 2)
        #expect(configuration.access.allowsPurge(address: [127, 0, 0, 1]) == true)
        #expect(configuration.access.allowsPurge(address: [10, 1, 2, 3]) == true)
        #expect(configuration.access.allowsPurge(address: [127, 0, 0, 2]) == false)
        #expect(PolicyConfiguration().access.allowsPurge(address: [127, 0, 0, 1]) == nil)
        let problems = Fixture.problems("access:\n  purge-clients: [\"10.1.0.0/33\"]\n")
        #expect(problems.count == 1 && problems[0].hasPrefix("t.yaml:2: access.purge-clients[0]:"), "\(problems)")
    }
}
