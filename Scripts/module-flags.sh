# Sourced by docs.sh and api-check.sh: builds the modules named in "${modules[@]}" and sets
# `triple` (this toolchain's target) and `flags` (the built modules, and every C shim's headers
# and module map, as the compiler saw them) for the toolchain's module tools. `$tool_name` names
# the calling script in errors.
triple=$(swift -print-target-info | sed -n 's/^ *"triple": *"\([^"]*\)".*/\1/p' | head -n 1)
if [ -z "$triple" ]; then
    echo "$tool_name: could not read the target triple from 'swift -print-target-info'." >&2
    exit 1
fi

for module in "${modules[@]}"; do
    swift build --target "$module"
done
bin=$(swift build --show-bin-path)

flags=(-I "$bin/Modules")
for include in Sources/C*/include; do
    target=$(basename "$(dirname "$include")")
    flags+=(-I "$include")
    if [ -f "$bin/$target.build/module.modulemap" ]; then
        flags+=(-Xcc "-fmodule-map-file=$bin/$target.build/module.modulemap")
    fi
done
