#include "loop/objective.h"

#include <algorithm>

#include "core/error.h"

namespace kopt {

const char* ObjectiveName(Objective o) {
  switch (o) {
    case Objective::kTime:
      return "time";
    case Objective::kEnergy:
      return "energy";
    case Objective::kEnergyAtSpeed:
      return "energy-at-speed";
  }
  return "time";
}

Objective ParseObjective(const std::string& name) {
  if (name == "time") return Objective::kTime;
  if (name == "energy") return Objective::kEnergy;
  if (name == "energy-at-speed") return Objective::kEnergyAtSpeed;
  throw Error("--objective " + name + " is not an objective: use time, energy or energy-at-speed.");
}

std::optional<double> SearchValue(const Measured& m, Objective o) {
  if (o == Objective::kEnergy) {
    if (m.energy_mj_per_call && *m.energy_mj_per_call > 0) return *m.energy_mj_per_call;
    return std::nullopt;
  }
  if (m.time_ms.median <= 0) return std::nullopt;
  double t = m.time_ms.median;
  if (m.eager_ms && m.clean_eager_ms && m.eager_ms->median > 0 && m.clean_eager_ms->median > 0)
    t *= std::clamp(m.clean_eager_ms->median / m.eager_ms->median, 1 / kMaxDriftCorrection,
                    kMaxDriftCorrection);
  return t;
}

int PickWinner(const std::vector<const Measured*>& c, Objective o, double speed_fraction) {
  int best_time = -1;
  for (int i = 0; i < static_cast<int>(c.size()); ++i)
    if (c[i]->time_ms.median > 0 &&
        (best_time < 0 || c[i]->time_ms.median < c[best_time]->time_ms.median))
      best_time = i;
  if (o == Objective::kTime || best_time < 0) return best_time;
  double limit =
      o == Objective::kEnergyAtSpeed ? c[best_time]->time_ms.median * (1 + speed_fraction) : 1e300;
  int best = -1;
  for (int i = 0; i < static_cast<int>(c.size()); ++i) {
    if (!c[i]->energy_mj_per_call || c[i]->time_ms.median > limit) continue;
    if (best < 0 || *c[i]->energy_mj_per_call < *c[best]->energy_mj_per_call) best = i;
  }
  return best >= 0 ? best : best_time;
}

}  // namespace kopt
