import Foundation
import Prometheus
import NIOConcurrencyHelpers
import TollgateCache
public import TollgatePolicy
public import TollgateSession
import TollgateTLS

/// The series read at scrape time from what already counts them (the policy's trust counter,
/// the cache store, the interceptor, the offline report), written into the registry before it
/// is emitted.
extension ProxyMetrics {
    /// The Prometheus text exposition of every series, with the scrape-time ones brought up to
    /// date from `runtime`, `cache`, `interceptor` and `offline` (each optional).
    public func exposition(
        runtime: PolicyRuntime? = nil,
        cache: ResponseCache? = nil,
        interceptor: Interceptor? = nil,
        offline: OfflineMode? = nil
    ) -> String {
        // One scrape at a time: a counter is moved by the difference from the value last written.
        scraped.withLockedValue { last in
            var written: [String: Gauge] = [:]
            if let runtime {
                syncTrust(runtime.trustFailureCounter, last: &last)
                syncConnectionTargets(runtime.connectionTargetStatuses, last: &last, written: &written)
                syncRevocationLists(runtime.configuration, files: runtime.trustEnvironment.files, written: &written)
                syncCertificateExpiries(runtime, written: &written)
            }
            if let cache, let stats = try? cache.store.statistics() { syncCache(stats, last: &last) }
            if let interceptor { syncInterception(interceptor, last: &last) }
            if let offline { syncOffline(offline.misses, last: &last) }
            scrapedGauges.withLockedValue { previous in
                for (key, gauge) in previous where written[key] == nil { registry.unregisterGauge(gauge) }
                previous = written
            }
        }
        return registry.emitToString()
    }

    /// Sets the gauge of `descriptor` and `labels` to `value`, and notes it as written this scrape
    /// (``scrapedGauges``).
    private func setGauge(
        _ descriptor: MetricNameDescriptor, labels: [(String, String)], to value: Int64, written: inout [String: Gauge]
    ) {
        let gauge = registry.makeGauge(descriptor: descriptor, labels: labels)
        gauge.set(value)
        written[descriptor.metricName + labels.map { "\u{1}\($0.0)=\($0.1)" }.joined()] = gauge
    }

    private func syncTrust(_ counter: TrustFailureCounter, last: inout [String: Int64]) {
        for (host, count) in counter.byHost {
            syncCounter(
                "tollgate_tls_trust_failures_total", labels: [("host", host)],
                help: "Refused or reported server trust, by host.", to: count, last: &last
            )
        }
        for (key, count) in counter.byHostAndKind {
            syncCounter(
                "tollgate_tls_trust_events_total", labels: [("host", key.host), ("reason", key.kind.rawValue)],
                help: "Server trust events by host and reason (failures, reported pins, insecure connections, "
                    + "client identities that could not be loaded).",
                to: count, last: &last
            )
        }
    }

    /// `connect-to` targets and upstream proxies: whether each is being passed over, and its
    /// failed connections.
    private func syncConnectionTargets(
        _ statuses: [ConnectionTargetStatus], last: inout [String: Int64], written: inout [String: Gauge]
    ) {
        let descriptor = MetricNameDescriptor.named(
            "tollgate_connect_to_target_down",
            help: "1 while a connect-to target is passed over (a connection to it failed within 10 s), else 0."
        )
        for status in statuses {
            let name = status.target.description
            setGauge(descriptor, labels: [("target", name)], to: Int64(status.isPassedOver ? 1 : 0), written: &written)
            syncCounter(
                "tollgate_connect_to_failures_total", labels: [("target", name)],
                help: "Connections to a connect-to target that could not be made.", to: status.failures, last: &last
            )
        }
    }

    /// Every revocation list the configuration names (`hosts[].trust.crls`,
    /// `listen[].tls.client-auth.crls`): when each list's issuer promises the next one. Read
    /// through `files`, the cache the connections read them through (a public CA's list can be
    /// megabytes), so a scrape reads a list once per reload, as the connections do.
    /// A list past it fails every chain it covers, so this is what to alert on
    /// (`tollgate_crl_next_update_timestamp_seconds - time() < 86400`). A file that cannot be read
    /// reads 0 (long past) under `issuer="-"`.
    private func syncRevocationLists(
        _ configuration: PolicyConfiguration, files cache: TrustFileCache, written: inout [String: Gauge]
    ) {
        var files = configuration.hosts.flatMap(\.trust.crls)
        files += configuration.listeners.flatMap { $0.tls?.clientAuth?.crls ?? [] }
        guard !files.isEmpty else { return }
        let descriptor = MetricNameDescriptor.named(
            "tollgate_crl_next_update_timestamp_seconds",
            help: "When a configured certificate revocation list's issuer promises the next one (its nextUpdate), "
                + "in seconds since 1970; past it the list fails every chain it covers. 0: the file cannot be read."
        )
        var seen: Set<String> = []
        for file in files where seen.insert(file).inserted {
            guard case .success(let lists) = cache.revocationLists(inFile: file) else {
                setGauge(descriptor, labels: [("file", file), ("issuer", "-")], to: 0, written: &written)
                continue
            }
            for list in lists {
                let seconds = list.nextUpdate.map { Int64($0.timeIntervalSince1970) } ?? Int64.max
                setGauge(descriptor, labels: [("file", file), ("issuer", list.issuer)], to: seconds, written: &written)
            }
        }
    }

    /// When certificates run out, in seconds since 1970: each TLS listener's own (read from its
    /// files now), and for each host a rule matches, the earliest `notAfter` of the chain its last
    /// verified connection was checked with; and when each listener's stapled OCSP response
    /// goes out of date. Alert ahead of them
    /// (`tollgate_…_certificate_expiry_timestamp_seconds - time() < 14 * 86400`).
    private func syncCertificateExpiries(_ runtime: PolicyRuntime, written: inout [String: Gauge]) {
        let upstream = MetricNameDescriptor.named(
            "tollgate_upstream_certificate_expiry_timestamp_seconds",
            help: "When the chain an upstream host's last verified connection presented expires (its earliest notAfter), "
                + "for hosts a rule matches; seconds since 1970."
        )
        for (host, date) in runtime.trustEnvironment.expiries.byHost {
            setGauge(upstream, labels: [("host", host)], to: Int64(date.timeIntervalSince1970), written: &written)
        }
        let listener = MetricNameDescriptor.named(
            "tollgate_listener_certificate_expiry_timestamp_seconds",
            help: "When a TLS listener's certificate (its leaf) expires, seconds since 1970; 0: the file cannot be read."
        )
        let staple = MetricNameDescriptor.named(
            "tollgate_listener_ocsp_next_update_timestamp_seconds",
            help: "When the OCSP response a TLS listener staples for a certificate (ocsp-response, or fetched with "
                + "ocsp-stapling) stops being stapled (its nextUpdate), seconds since 1970; 0: none can be stapled."
        )
        let fetchers = stapleFetchers
        for entry in runtime.configuration.listeners {
            guard let tls = entry.tls else { continue }
            for files in tls.certificates {
                let chain = (try? Certificate.bundle(pemFile: files.certificate)) ?? []
                let leaf = chain.first
                setGauge(
                    listener,
                    labels: [("listener", entry.address.description), ("subject", leaf?.subject ?? "-"), ("file", files.certificate)],
                    to: Int64(leaf.map { $0.notAfter.timeIntervalSince1970 } ?? 0), written: &written
                )
                let response: OCSPResponse?
                switch ListenerStaple.of(files, chain: chain, tls: tls, address: entry.address.description, fetchers: fetchers) {
                case nil: continue
                case .file(let read): response = try? read.get()
                case .fetched(let fetched): response = fetched
                }
                let seconds = response.map { $0.nextUpdate.map { Int64($0.timeIntervalSince1970) } ?? Int64.max } ?? 0
                setGauge(staple, labels: [("listener", entry.address.description), ("certificate", files.certificate)], to: seconds, written: &written)
            }
        }
    }

    private func syncCache(_ stats: CacheStatistics, last: inout [String: Int64]) {
        func gauge(_ name: String, _ help: String) -> Gauge { registry.makeGauge(descriptor: .named(name, help: help)) }
        gauge("tollgate_cache_entries", "Stored responses (variants).").set(Int64(stats.entries))
        gauge("tollgate_cache_bytes", "Bytes the cache holds, bodies and records.").set(stats.bytes)
        gauge("tollgate_cache_capacity_bytes", "The cache's max-size.").set(stats.capacity)
        syncCounter(
            "tollgate_cache_evictions_total", labels: [],
            help: "Stored responses evicted to stay under max-size.", to: Int(stats.evictions), last: &last
        )
    }

    private func syncInterception(_ interceptor: Interceptor, last: inout [String: Int64]) {
        let figures = interceptor.figures
        syncCounter(
            "tollgate_interceptions_total", labels: [], help: "CONNECTs answered by TLS interception.",
            to: figures.interceptions, last: &last
        )
        syncCounter(
            "tollgate_interception_leaves_minted_total", labels: [], help: "Server certificates minted from the local CA.",
            to: figures.leavesMinted, last: &last
        )
        let refused = MetricNameDescriptor.named(
            "tollgate_interception_refused_hosts",
            help: "Hosts tunnelled untouched since a client refused their minted certificate."
        )
        registry.makeGauge(descriptor: refused).set(Int64(figures.refusedHosts))
    }

    private func syncOffline(_ report: OfflineMissReport, last: inout [String: Int64]) {
        for (reason, count) in report.countsByReason {
            syncCounter(
                "tollgate_offline_misses_total", labels: [("reason", reason.rawValue)],
                help: "Requests an offline proxy could not serve, by reason.", to: count, last: &last
            )
        }
    }

    /// Moves the counter `name{labels}` up to `value` (a count kept elsewhere).
    private func syncCounter(
        _ name: String, labels: [(String, String)], help: String, to value: Int, last: inout [String: Int64]
    ) {
        let key = name + "{" + labels.map { $0.0 + "=" + $0.1 }.joined(separator: ",") + "}"
        let counter =
            labels.isEmpty
            ? registry.makeCounter(descriptor: .named(name, help: help))
            : registry.makeCounter(descriptor: .named(name, help: help), labels: labels)
        let previous = last[key] ?? 0
        let now = Int64(value)
        if now < previous { counter.reset() }
        let delta = now < previous ? now : now - previous
        if delta > 0 { counter.increment(by: delta) }
        last[key] = now
    }
}

extension MetricNameDescriptor {
    /// A descriptor for the whole name `name` (Tollgate's names are written out in full).
    static func named(_ name: String, help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }
}
