#include "diagnose/tools/tools.h"

namespace kopt {

void RegisterBuiltinTools(ToolRegistry* registry) {
  using MakeFn = std::unique_ptr<AnalysisTool> (*)();
  const MakeFn kFactories[] = {
      MakeUncoalescedGlobalTool,  MakeBankConflictsTool,    MakeNarrowLoadsTool,
      MakeRegisterSpillsTool,     MakeOccupancyLimiterTool, MakeSmallGridTailTool,
      MakeDramAtRoofTool,         MakePoorL2ReuseTool,      MakeWarpStallsTool,
      MakeNoTensorCoresTool,      MakeFp32PipeSaturatedTool, MakeSpecialFunctionOverheadTool,
      MakeWarpDivergenceTool,     MakeManySmallKernelsTool, MakeHostOverheadTool,
      MakeSlowMmaPathTool};
  for (MakeFn make : kFactories) registry->Register(make()->name(), make);
}

ToolRegistry BuiltinTools() {
  ToolRegistry registry;
  RegisterBuiltinTools(&registry);
  return registry;
}

}  // namespace kopt
