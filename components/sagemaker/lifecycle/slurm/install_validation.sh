#!/bin/bash
# install_validation.sh: copy the validation sbatch scripts trainstack shipped with this bundle
# (nccl-all-reduce-<group>.sbatch) to /opt/trainstack/validation, where the README's Validate section
# submits them from. Nothing to copy is fine: validation is a setting.
set -euo pipefail

target=/opt/trainstack/validation
mkdir -p "$target"
shopt -s nullglob
jobs=(*.sbatch)
for job in "${jobs[@]}"; do
  install -m 0755 "$job" "$target/$job"
done
echo "[trainstack] ${#jobs[@]} validation job(s) in /opt/trainstack/validation"
