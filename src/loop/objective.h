// What an optimization run minimizes: time per call (the default), energy
// per call, or energy at matched speed (the least energy among candidates
// within a set fraction of the best time).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/outcome.h"

namespace kopt {

enum class Objective {
  kTime,           ///< median time per call (CUDA events)
  kEnergy,         ///< energy per call (NVML's energy counter)
  kEnergyAtSpeed,  ///< search on time; the winner is the least energy within the speed fraction of
                   ///< the best time
};

/// "time", "energy", "energy-at-speed".
const char* ObjectiveName(Objective o);
/// Throws kopt::Error naming the choices for an unknown name.
Objective ParseObjective(const std::string& name);

/// How far the search's time may be corrected for the worker's drift (see
/// SearchValue): at most this factor either way.
inline constexpr double kMaxDriftCorrection = 1.15;

/// The value the search ranks a measured candidate by (lower is better):
/// time for kTime and kEnergyAtSpeed, energy for kEnergy; nullopt when the
/// measurement lacks it (no energy counter).
///
/// Time is corrected for the state of the worker it was measured in: on the
/// H200, one worker's times of memory-bound calls move by up to 11% between
/// candidates, the candidate and the eager reference timed beside it
/// together (bench/results, "drift"), while the clean process's eager time
/// stays put. So the time is scaled by clean eager / eager beside it, bounded
/// by kMaxDriftCorrection: a candidate that slows the reference beside it
/// gains at most that in the search's ranking, and nothing in what is
/// reported (speedups use the raw time and the faster eager; the finalists
/// are ranked on raw times re-measured together).
std::optional<double> SearchValue(const Measured& m, Objective o);

/// The index of the winner among `candidates` (every one measured), or -1
/// when there is none: the least time (kTime), the least energy (kEnergy,
/// ignoring those without energy), or the least energy among those within
/// `speed_fraction` of the best time (kEnergyAtSpeed; falls back to time
/// when none has energy).
int PickWinner(const std::vector<const Measured*>& candidates, Objective o, double speed_fraction);

}  // namespace kopt
