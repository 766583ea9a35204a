public import Foundation
public import TollgateHTTP

/// How old a stored response is and how long it stays fresh (RFC 9111 §4.2), at a given `now`.
///
/// Every input is explicit (the stored times and the caller's `now`), so the same inputs
/// always give the same answer: tests pass a fixed clock, the store passes its own.
///
/// - Age (§4.2.3): `apparent_age = max(0, response_time − date_value)`,
///   `corrected_age_value = age_value + (response_time − request_time)`,
///   `corrected_initial_age = max(apparent_age, corrected_age_value)`,
///   `current_age = corrected_initial_age + (now − response_time)`. A missing or invalid
///   Date counts as `response_time`; an invalid Age field is ignored (§5.1).
/// - Lifetime (§4.2.1), first that applies: `s-maxage` (shared cache only), `max-age`,
///   `Expires − Date` (an invalid Expires, such as `0`, is already expired, §5.3), then the
///   heuristic (§4.2.2): a fraction of `Date − Last-Modified`, capped, only for heuristically
///   cacheable statuses or `public` responses; otherwise 0.
public struct Freshness: Sendable, Hashable {
    /// The response's current age in seconds.
    public var currentAge: Double
    /// The freshness lifetime in seconds.
    public var lifetime: Double
    /// Whether the lifetime is heuristic (no explicit freshness information).
    public var isHeuristic: Bool
    /// The response's `stale-while-revalidate` window in seconds (RFC 5861 §3), if any.
    public var staleWhileRevalidate: Double?
    /// The response's `stale-if-error` window in seconds (RFC 5861 §4), if any.
    public var staleIfError: Double?

    /// Computes freshness from a response's fields and times.
    public init(
        headerFields: HeaderFields,
        status: Int,
        requestTime: Date,
        responseTime: Date,
        now: Date,
        rules: CacheRules = .shared
    ) {
        self.init(
            headerFields: headerFields,
            cacheControl: rules.responseControl(headerFields),
            status: status,
            requestTime: requestTime,
            responseTime: responseTime,
            now: now,
            rules: rules
        )
    }

    /// The same with the response's Cache-Control already parsed, and its Date parsed once.
    init(
        headerFields: HeaderFields,
        cacheControl: CacheControl,
        status: Int,
        requestTime: Date,
        responseTime: Date,
        now: Date,
        rules: CacheRules
    ) {
        self.init(
            basis: AgeBasis(headerFields: headerFields, requestTime: requestTime, responseTime: responseTime),
            headerFields: headerFields,
            cacheControl: cacheControl,
            status: status,
            responseTime: responseTime,
            now: now,
            rules: rules
        )
    }

    /// The freshness from a response's age basis (its Date parsed, its initial age worked out).
    private init(
        basis: AgeBasis,
        headerFields: HeaderFields,
        cacheControl: CacheControl,
        status: Int,
        responseTime: Date,
        now: Date,
        rules: CacheRules
    ) {
        currentAge = basis.currentAge(responseTime: responseTime, now: now)
        (lifetime, isHeuristic) = Self.lifetime(
            headerFields: headerFields,
            cacheControl: cacheControl,
            dateValue: basis.dateValue,
            status: status,
            responseTime: responseTime,
            rules: rules
        )
        staleWhileRevalidate = cacheControl.staleWhileRevalidate.map(Double.init)
        staleIfError = cacheControl.staleIfError.map(Double.init)
    }

    /// The part of a response's age that does not change with time: its Date value and its
    /// `corrected_initial_age` (§4.2.3); `current_age` adds the time since `response_time`.
    struct AgeBasis: Sendable, Hashable {
        /// The Date field (nil: absent or invalid).
        var dateValue: Date?
        var correctedInitialAge: Double

        init(headerFields: HeaderFields, requestTime: Date, responseTime: Date) {
            dateValue = headerFields.date(.date, now: responseTime)
            let date = dateValue ?? responseTime
            let apparentAge = max(0, responseTime.timeIntervalSince(date))
            let responseDelay = max(0, responseTime.timeIntervalSince(requestTime))
            let correctedAgeValue = Freshness.ageValue(headerFields).map { Double($0) + responseDelay } ?? responseDelay
            correctedInitialAge = max(apparentAge, correctedAgeValue)
        }

        /// `current_age` at `now`: the corrected initial age and the time since `responseTime`.
        func currentAge(responseTime: Date, now: Date) -> Double {
            correctedInitialAge + max(0, now.timeIntervalSince(responseTime))
        }
    }

    /// The freshness of a stored response whose Cache-Control is already parsed, from the age
    /// basis kept with it (no field parsed again).
    init(_ stored: StoredResponse, cacheControl: CacheControl, now: Date, rules: CacheRules) {
        self.init(
            basis: stored.ageBasis,
            headerFields: stored.headerFields,
            cacheControl: cacheControl,
            status: stored.status,
            responseTime: stored.responseTime,
            now: now,
            rules: rules
        )
        if let marked = stored.staleSince {
            // Soft-purged: its lifetime ended when it was marked (the age it had then), so it is
            // stale, by the time since the mark — what the stale-* windows are measured against.
            // Its age stays its own.
            lifetime = min(lifetime, max(0, currentAge - now.timeIntervalSince(marked)))
        }
    }

    /// Computes the freshness of a stored response.
    public init(_ stored: StoredResponse, now: Date, rules: CacheRules = .shared) {
        self.init(stored, cacheControl: rules.responseControl(for: stored), now: now, rules: rules)
    }

    /// Whether the response is fresh: its lifetime exceeds its age (§4.2).
    public var isFresh: Bool { lifetime > currentAge }

    /// How long ago it became stale, in seconds; 0 while fresh.
    public var staleness: Double { max(0, currentAge - lifetime) }

    /// The age as an Age field value: whole seconds, rounded down (§5.1).
    public var ageFieldValue: Int { Self.wholeSeconds(currentAge) }

    /// `current_age` of §4.2.3, in seconds.
    public static func currentAge(
        headerFields: HeaderFields,
        requestTime: Date,
        responseTime: Date,
        now: Date
    ) -> Double {
        AgeBasis(headerFields: headerFields, requestTime: requestTime, responseTime: responseTime)
            .currentAge(responseTime: responseTime, now: now)
    }

    /// The freshness lifetime in seconds, and whether it is heuristic.
    public static func lifetime(
        headerFields: HeaderFields,
        status: Int,
        responseTime: Date,
        rules: CacheRules = .shared
    ) -> (seconds: Double, heuristic: Bool) {
        lifetime(
            headerFields: headerFields,
            cacheControl: rules.responseControl(headerFields),
            dateValue: headerFields.date(.date, now: responseTime),
            status: status,
            responseTime: responseTime,
            rules: rules
        )
    }

    /// The lifetime with Cache-Control and Date already parsed.
    static func lifetime(
        headerFields: HeaderFields,
        cacheControl: CacheControl,
        dateValue: Date?,
        status: Int,
        responseTime: Date,
        rules: CacheRules
    ) -> (seconds: Double, heuristic: Bool) {
        if rules.isShared, let sMaxAge = cacheControl.sMaxAge { return (Double(sMaxAge), false) }
        if let maxAge = cacheControl.maxAge { return (Double(maxAge), false) }
        let date = dateValue ?? responseTime
        if headerFields.contains(.expires) {
            guard let expires = headerFields.date(.expires, now: responseTime) else { return (0, false) }
            return (max(0, expires.timeIntervalSince(date)), false)
        }
        guard CacheRules.heuristicallyCacheableStatuses.contains(status) || cacheControl.public,
            let lastModified = headerFields.date(.lastModified, now: responseTime), lastModified < date
        else { return (0, false) }
        return (min(date.timeIntervalSince(lastModified) * rules.heuristicFraction, rules.heuristicLimit), true)
    }

    /// The Age field's value (§5.1): the first list member if it is delta-seconds, else nil.
    static func ageValue(_ headerFields: HeaderFields) -> Int? {
        guard let first = FieldList.elements(headerFields.values(for: .age)).first, !first.isEmpty,
            first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else { return nil }
        // Saturate like delta-seconds (§1.2.2) rather than overflow on a long run of digits.
        return first.count > 10
            ? CacheControl.maximumDeltaSeconds : min(Int(first) ?? 0, CacheControl.maximumDeltaSeconds)
    }

    /// Whole seconds, rounded down, clamped to delta-seconds' range.
    static func wholeSeconds(_ seconds: Double) -> Int {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return seconds >= Double(CacheControl.maximumDeltaSeconds) ? CacheControl.maximumDeltaSeconds : Int(seconds)
    }
}
