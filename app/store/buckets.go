package store

// The whole bucket layout of selfcode.db. Every key and value format is
// described here and nowhere else.
//
//	jobs          job id (ULID, lower case; sorts by creation)  → job.Job as JSON
//	queue         8-byte big-endian sequence                    → job id   (FIFO of runnable pipeline jobs)
//	control       8-byte big-endian sequence                    → job id   (FIFO of control jobs: cancel/retry/status/help)
//	leases        job id                                        → lease as JSON {owner, deadline, attempt}
//	scheduled     8-byte big-endian unix nanos ‖ job id         → job id   (jobs waiting for a time)
//	deliveries    X-GitHub-Delivery                             → deliveryRecord as JSON {at, event, job_id, result}
//	active        "owner/name#N" (lower case)                   → slot as JSON {current, next, last}: the issue's
//	              active job, the one waiting behind it, and its newest pipeline job
//	artifacts     job id ‖ 0x00 ‖ name                          → bytes
//	notices       "owner/name#N" ‖ 0x00 ‖ kind                  → 8-byte unix nanos (one-per-issue replies already sent)
//	installations installation id (decimal)                     → installation record as JSON
//	consumed      "comment:<id>" | "review:<id>"                → job id (feedback already turned into a job)
//	counts        state name                                    → 8-byte big-endian count of jobs in that state
//	meta          "schema" → schema version; "instance" → this data directory's instance name
//	windows       8-byte big-endian unix nanos of an overnight window's start → Window as JSON
//	              {start, jobs, moved, report_id, closed} (the jobs that window started or moved on)
//	reports       report id (ULID, lower case; sorts by creation)  → Report as JSON (a morning report,
//	              its payload and delivery state)
//	usage         installation id (decimal) ‖ 0x00 ‖ day "YYYY-MM-DD" → 8-byte big-endian model tokens
//	              used that day ‖ 8-byte big-endian nano-dollars they cost (daily token and cost
//	              budgets; a value written before cost was counted has the tokens only)
//
// A queued job that waits for a time (deferred by the daily budget) also has
// a scheduled entry; PromoteDue returns it to the FIFO when its time comes.
//
// Schema 2 keeps what a delivery writes small, because intake's pace is the
// pace of its commits (docs/benchmarks.md): schema 1's "last" bucket is the
// slot's last field, and its "delivery_age" index is gone (old delivery ids
// are pruned by the time in their record). Open upgrades a schema 1 file.
var (
	bucketJobs          = []byte("jobs")
	bucketQueue         = []byte("queue")
	bucketControl       = []byte("control")
	bucketLeases        = []byte("leases")
	bucketScheduled     = []byte("scheduled")
	bucketDeliveries    = []byte("deliveries")
	bucketActive        = []byte("active")
	bucketArtifacts     = []byte("artifacts")
	bucketNotices       = []byte("notices")
	bucketInstallations = []byte("installations")
	bucketConsumed      = []byte("consumed")
	bucketCounts        = []byte("counts")
	bucketMeta          = []byte("meta")
	bucketWindows       = []byte("windows")
	bucketReports       = []byte("reports")
	bucketUsage         = []byte("usage")

	allBuckets = [][]byte{
		bucketJobs, bucketQueue, bucketControl, bucketLeases, bucketScheduled,
		bucketDeliveries, bucketActive, bucketArtifacts,
		bucketNotices, bucketInstallations, bucketConsumed, bucketCounts, bucketMeta,
		bucketWindows, bucketReports, bucketUsage,
	}
)

const schemaVersion = "2"

// Schema 1's buckets that schema 2 folded away (see upgradeFrom1).
var (
	bucketLastV1        = []byte("last")
	bucketDeliveryAgeV1 = []byte("delivery_age")
)
