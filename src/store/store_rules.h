// What both RunStore implementations share, so the in-memory twin behaves
// exactly like the SQLite store: clocks and timestamps, run ids, prefix
// lookup, how typed values travel through JSON, and the checks on records.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "store/run_store.h"

namespace kopt::store_rules {

/// `now` itself, or the system clock when it is empty.
WallClock ClockOr(WallClock now);

/// UTC ISO-8601 with milliseconds: "2026-12-03T08:12:05.123Z" (sorts as time).
std::string IsoUtc(std::chrono::system_clock::time_point t);

/// "20261203-0812-3fa2": the UTC minute, then four random hex digits.
std::string NewRunId(std::chrono::system_clock::time_point t, std::mt19937_64& rng);

/// A random generator seeded from the OS (two processes never share ids).
std::mt19937_64 SeededRng();

/// How many times CreateRun draws a new id before giving up (and throwing
/// kopt::Error: 64 collisions in 65536 ids take tens of thousands of runs in
/// one minute).
inline constexpr int kRunIdAttempts = 64;
[[noreturn]] void ThrowNoFreeRunId();

/// Lower-cases a run id prefix as typed by a person.
std::string NormalizePrefix(const std::string& prefix);

/// Throws kopt::Error: `prefix` fits all of `matches` (sorted, at least two).
[[noreturn]] void ThrowAmbiguousPrefix(const std::string& prefix,
                                       const std::vector<std::string>& matches);

/// The JSON a task's bundle and contract are stored as, and back. The
/// contract's "source" travels beside its fields (ContractFromJson refuses it
/// as a field).
Json BundleToStored(const TaskBundle& b);
TaskBundle BundleFromStored(const Json& j);
Json ContractToStored(const Contract& c);
Contract ContractFromStored(const Json& j);

/// JSON as stored: compact text, invalid UTF-8 replaced (compiler logs may
/// hold any bytes), and the value that text reads back as.
std::string DumpJson(const Json& j);
Json AsStored(const Json& j);

/// The winner's speedup vs eager in a task's finalists (TaskRecord::finalists),
/// if they name a winner that has one.
std::optional<double> FinalistWinnerSpeedup(const Json& finalists);

/// Never worse than the reference: a task whose winner does not beat eager
/// PyTorch (its speedup, re-timed among the finalists where they ran, at or
/// below 1) keeps the reference, and `kopt export` writes the task's own
/// Model as ModelNew. Unknown speedup (no eager baseline): the winner stands.
bool KeepsReference(std::optional<double> winner_speedup_vs_eager);

/// SQLite stores a NaN as NULL; both stores do the same.
std::optional<double> FiniteOrNone(std::optional<double> v);

/// Throws std::invalid_argument unless the verdict is one OutcomeName()
/// gives and gpu_s is finite and not negative.
void CheckOutcome(const OutcomeRecord& outcome);
/// Throws std::invalid_argument unless every amount is finite.
void CheckSpent(const BudgetSpent& spent);

/// Throws std::invalid_argument (a bug in the caller) with `what`.
[[noreturn]] void ThrowBadCall(const std::string& what);

}  // namespace kopt::store_rules
