// Factories of the built-in analysis tools, one per file in this folder.
#pragma once

#include <memory>

#include "diagnose/analysis_tool.h"

namespace kopt {

std::unique_ptr<AnalysisTool> MakeUncoalescedGlobalTool();
std::unique_ptr<AnalysisTool> MakeBankConflictsTool();
std::unique_ptr<AnalysisTool> MakeNarrowLoadsTool();
std::unique_ptr<AnalysisTool> MakeRegisterSpillsTool();
std::unique_ptr<AnalysisTool> MakeOccupancyLimiterTool();
std::unique_ptr<AnalysisTool> MakeSmallGridTailTool();
std::unique_ptr<AnalysisTool> MakeDramAtRoofTool();
std::unique_ptr<AnalysisTool> MakePoorL2ReuseTool();
std::unique_ptr<AnalysisTool> MakeWarpStallsTool();
std::unique_ptr<AnalysisTool> MakeNoTensorCoresTool();
std::unique_ptr<AnalysisTool> MakeFp32PipeSaturatedTool();
std::unique_ptr<AnalysisTool> MakeSpecialFunctionOverheadTool();
std::unique_ptr<AnalysisTool> MakeWarpDivergenceTool();
std::unique_ptr<AnalysisTool> MakeManySmallKernelsTool();
std::unique_ptr<AnalysisTool> MakeHostOverheadTool();
std::unique_ptr<AnalysisTool> MakeSlowMmaPathTool();

/// Adds every tool above to `registry`.
void RegisterBuiltinTools(ToolRegistry* registry);

}  // namespace kopt
