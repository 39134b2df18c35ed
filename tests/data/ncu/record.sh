#!/usr/bin/env bash
# Records real Nsight Compute CSV for the fixtures on a GPU machine.
# Run from the repository root: tests/data/ncu/record.sh
# Writes tests/data/ncu/h200_raw_page.csv, h200_details_page.csv and
# h200_versions.txt; commit them and point the NcuCsv tests at them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(mktemp -d)/profile_fixtures"
nvcc -O3 -arch=sm_90 -o "$bin" "$here/profile_fixtures.cu"
metrics="$(grep -v '^#' "$here/metrics.txt" | paste -sd, -)"
{ ncu --version; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -1; } \
  > "$here/h200_versions.txt"
ncu --clock-control none --csv --page raw --metrics "$metrics" "$bin" > "$here/h200_raw_page.csv"
ncu --clock-control none --csv --page raw --print-units base --metrics "$metrics" "$bin" \
  > "$here/h200_raw_page_base_units.csv"
ncu --clock-control none --csv --metrics "$metrics" "$bin" > "$here/h200_details_page.csv"
# The source page of one kernel (kopt profile --source reads this layout).
rep="$(dirname "$bin")/source"
ncu --clock-control none --section SourceCounters --section WarpStateStats --kernel-name regex:^transpose_naive \
  --launch-count 1 --export "$rep" --force-overwrite "$bin" > /dev/null
ncu --import "$rep.ncu-rep" --page source --csv --print-source sass > "$here/h200_source_page.csv"
echo "recorded: $(ls "$here"/h200_*)"
