#!/usr/bin/env python3
"""Coverage of AVFoundation's capture API (API/AVFoundationCapture/symbols.txt) by Viewfinder's
public API, read from swift-api-digester dumps (-dump-sdk JSON). Called by Scripts/api-coverage.sh;
see there for the arguments."""
import json
import re
import sys
from collections import OrderedDict

MODULE_PREFIX = re.compile(r"\b(?:Viewfinder\w*|Swift|Foundation)\.")


def plain(type_name):
    """'ViewfinderCore.CaptureDevice.Dimensions' -> 'CaptureDevice.Dimensions' (generic arguments and
    'any' dropped)."""
    name = MODULE_PREFIX.sub("", type_name)
    name = re.sub(r"<.*>", "", name)
    return name.replace("any ", "").strip()


def read_public_names(dump_paths):
    names, aliases, supers = set(), {}, {}

    def walk(node, path):
        for child in node.get("children", []):
            kind = child.get("kind")
            printed = child.get("printedName")
            if kind == "TypeDecl":
                qualified = ".".join(path + [printed])
                names.add(qualified)
                parents = supers.setdefault(qualified, set())
                parents.update(plain(s) for s in child.get("superclassNames", []))
                # Members a type gets from the protocols it adopts (a refined protocol's
                # requirements; a protocol extension's initializer, as CaptureDevice(uniqueID:)).
                parents.update(plain(c.get("printedName", "")) for c in child.get("conformances", []))
                walk(child, path + [printed])
            elif kind == "TypeAlias":
                qualified = ".".join(path + [printed])
                names.add(qualified)
                if child.get("children"):
                    aliases[qualified] = plain(child["children"][0].get("printedName", ""))
            elif kind in ("Var", "Function", "Constructor", "Subscript"):
                names.add(".".join(path + [printed]))

    for path in dump_paths:
        with open(path) as handle:
            walk(json.load(handle)["ABIRoot"], [])
    return names, aliases, supers


def exists(symbol, names, aliases, supers, depth=0):
    if symbol in names:
        return True
    if depth > 6:
        return False
    parts = symbol.split(".")
    # A member of a type: look it up through type aliases and superclasses.
    for cut in range(len(parts) - 1, 0, -1):
        owner, rest = ".".join(parts[:cut]), ".".join(parts[cut:])
        target = aliases.get(owner)
        if target and target != owner and exists(target + "." + rest, names, aliases, supers, depth + 1):
            return True
        for parent in supers.get(owner, ()):
            if exists(parent + "." + rest, names, aliases, supers, depth + 1):
                return True
    return False


def main():
    args = sys.argv[1:]
    symbols_path = args.pop(0)
    show = "missing"
    if args and args[0] in ("--missing", "--no-missing", "--present"):
        show = args.pop(0)[2:]
    names, aliases, supers = read_public_names(args)

    themes = OrderedDict()
    missing = OrderedDict()
    present = []
    total = goal_total = goal_have = newer_total = newer_have = 0
    for line in open(symbols_path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        symbol, theme, version = fields[0], fields[1], fields[2]
        macos_only = "macos-only" in fields[3:]
        have = exists(symbol, names, aliases, supers)
        stats = themes.setdefault(theme, [0, 0, 0])  # have, goal total, macOS-only
        total += 1
        if macos_only:
            stats[2] += 1
            continue
        stats[1] += 1
        goal_total += 1
        try:
            newer = float(version) > 18.1
        except ValueError:
            newer = False
        newer_total += newer
        if have:
            stats[0] += 1
            goal_have += 1
            newer_have += newer
            present.append(symbol)
        else:
            missing.setdefault(theme, []).append(symbol)

    print("AVFoundation capture API coverage (%s; macOS-only members are not in the goal)" % symbols_path)
    print("%-22s %9s %7s" % ("theme", "present", "%"))
    for theme, (have, count, mac) in themes.items():
        if count == 0:
            continue
        note = "  (+%d macOS-only)" % mac if mac else ""
        print("%-22s %4d/%-4d %6.1f%%%s" % (theme, have, count, 100.0 * have / count, note))
    print("%-22s %4d/%-4d %6.1f%%" % ("total", goal_have, goal_total, 100.0 * goal_have / max(goal_total, 1)))
    print("  of which added after iOS 18.1: %d/%d; macOS-only, not counted: %d" % (newer_have, newer_total, total - goal_total))
    if show == "missing":
        print("\nMissing, by theme:")
        for theme, symbols in missing.items():
            print("  %s (%d): %s" % (theme, len(symbols), " ".join(symbols)))
    elif show == "present":
        print("\n".join(present))


if __name__ == "__main__":
    main()
