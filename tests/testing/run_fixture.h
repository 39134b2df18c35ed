// An optimization run written through the RunStore API, for the report
// tests and the browser test, until a real run's database from the H200
// replaces it (tests/data/runs/README.md).
//
// Two tasks: 04_softmax and 10_sum_dim. Their roots are the shipped
// solutions at their defaults with the times, baselines and floors recorded
// on the H200 (bench/results); the children are the real tune proposer's
// proposals (moves, sources, knob records), measured by a deterministic
// model around those times; one child of each failure kind; diagnoses from
// the analysis tools on recorded H200 profiles (tests/data/runs/).
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "store/run_store.h"

namespace kopt::testing {

struct FixtureStore {
  std::unique_ptr<RunStore> store;
  std::string run_id;
};

/// The fixture run in a new SQLite store at `path` (its clock is simulated,
/// starting 2026-12-03T08:12:00Z, so times since the start are plausible).
FixtureStore MakeFixtureSqlite(const std::filesystem::path& path);
/// The same run in a memory store.
FixtureStore MakeFixtureMemory();

/// Writes the fixture run into `store`, advancing `*now` (the store's clock)
/// as the evaluations would take time; returns the run's id.
std::string WriteFixtureRun(RunStore* store, std::chrono::system_clock::time_point* now);

/// Run stores recorded by real runs: every *.db under tests/data/runs/
/// (none until one is copied there).
std::vector<std::filesystem::path> RecordedRunStores();

}  // namespace kopt::testing
