#!/usr/bin/env python3
"""Writes a Swift package that compiles every ```swift block of the given Markdown files.

    doc-snippets.py CHECKOUT OUTPUT_DIR FILE.md...
    doc-snippets.py --quick-start README.md PACKAGE_DIR    (prints the executable's name)

Used by Scripts/doc-snippets-check.sh, which documents the rules (program, file scope, function
body, opt-out with a reason). Prints one line per skipped block and the counts.
"""
import os
import re
import sys

MARKER = re.compile(r"^\s*<!--\s*snippet-check:\s*(\w+)\s*(.*?)\s*-->\s*$")
FILE_SCOPE = re.compile(r"^(extension |@Test|@Suite|@main|#if |struct \w+Tests|func test)", re.M)
IMPORT = re.compile(r"^(@testable )?import \w+\s*$")

# Names the articles use without declaring them, handed to every function-body block. A block
# that declares one of them (`let session = CaptureSession()`) shadows the parameter.
PARAMETERS = """\
    session: CaptureSession, camera: CaptureDevice, cameras: [CaptureDevice], output: CaptureVideoDataOutput,
    connection: CaptureConnection, previewLayer: CaptureVideoPreviewLayer, sampleBuffer: SampleBuffer,
    handler: any CaptureVideoDataOutputSampleBufferDelegate, tap: CGPoint"""

PRELUDE = "import Dispatch\nimport Foundation\nimport Testing\nimport Viewfinder\nimport ViewfinderSimulator\n"


def blocks(path):
    """(line number, marker kind, marker reason, code) for each ```swift block of `path`."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```swift":
            start = i
            marker = (None, "")
            j = i - 1
            while j >= 0 and lines[j].strip() == "":
                j -= 1
            if j >= 0:
                m = MARKER.match(lines[j])
                if m:
                    marker = (m.group(1), m.group(2))
            i += 1
            body = []
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            yield start + 1, marker[0], marker[1], "\n".join(body)
        i += 1


def identifier(path, number):
    stem = re.sub(r"[^A-Za-z0-9]", "_", os.path.splitext(os.path.basename(path))[0])
    return f"{stem}_line{number}"


def quick_start(readme, out):
    """Writes the README's quick start as a new package at `out`: its Package.swift (the first
    block that starts with `// swift-tools-version`) and main.swift (the first block marked
    `snippet-check: program`), in Sources/<the manifest's executable target>."""
    manifest = program = None
    for _, kind, _, code in blocks(readme):
        if manifest is None and code.startswith("// swift-tools-version"):
            manifest = code
        if program is None and kind == "program":
            program = code
    if manifest is None or program is None:
        sys.exit(f"doc-snippets: {readme} has no quick-start Package.swift or program block")
    target = re.search(r'\.executableTarget\(\s*name:\s*"([^"]+)"', manifest)
    if not target:
        sys.exit(f"doc-snippets: the quick start's Package.swift in {readme} has no executable target")
    sources = os.path.join(out, "Sources", target.group(1))
    os.makedirs(sources, exist_ok=True)
    with open(os.path.join(out, "Package.swift"), "w", encoding="utf-8") as f:
        f.write(manifest + "\n")
    with open(os.path.join(sources, "main.swift"), "w", encoding="utf-8") as f:
        f.write(program + "\n")
    print(target.group(1))


def main():
    if sys.argv[1] == "--quick-start":
        quick_start(sys.argv[2], sys.argv[3])
        return
    checkout, out = sys.argv[1], sys.argv[2]
    documents = sys.argv[3:]
    tests = os.path.join(out, "Tests", "DocSnippets")
    os.makedirs(tests, exist_ok=True)
    programs = []
    compiled = skipped = 0
    for document in documents:
        for line, kind, reason, code in blocks(document):
            name = identifier(document, line)
            where = f"{document}:{line}"
            if kind == "skip":
                if not reason:
                    sys.exit(f"doc-snippets: {where}: 'snippet-check: skip' needs a reason")
                print(f"skipped {where}: {reason}")
                skipped += 1
                continue
            if kind not in (None, "program", "file"):
                sys.exit(f"doc-snippets: {where}: unknown marker 'snippet-check: {kind}'")
            header = f"// {where}\n"
            if kind == "program":
                target = "Program_" + name
                directory = os.path.join(out, "Sources", target)
                os.makedirs(directory, exist_ok=True)
                with open(os.path.join(directory, "main.swift"), "w", encoding="utf-8") as f:
                    f.write(header + code + "\n")
                programs.append(target)
            elif kind == "file" or FILE_SCOPE.search(code):
                with open(os.path.join(tests, name + ".swift"), "w", encoding="utf-8") as f:
                    f.write(header + PRELUDE + code + "\n")
            else:
                imports = [l for l in code.split("\n") if IMPORT.match(l)]
                rest = [l for l in code.split("\n") if not IMPORT.match(l)]
                body = "\n".join("    " + l if l else l for l in rest)
                with open(os.path.join(tests, name + ".swift"), "w", encoding="utf-8") as f:
                    f.write(header + PRELUDE + "\n".join(imports) + "\n\n")
                    # async only where the block awaits, as top-level code is (Thread.sleep and
                    # semaphores are unavailable in async contexts).
                    effects = "async throws" if re.search(r"\bawait\b", code) else "throws"
                    f.write(f"@MainActor\nfunc snippet_{name}(\n{PARAMETERS}\n) {effects} {{\n{body}\n}}\n")
            compiled += 1
    products = ['.product(name: "Viewfinder", package: "Viewfinder")']
    manifest = [
        "// swift-tools-version: 6.0",
        "// Generated by Scripts/doc-snippets.py: every ```swift block of the README and the DocC articles.",
        "import PackageDescription",
        "",
        "let package = Package(",
        '    name: "DocSnippets",',
        f'    dependencies: [.package(name: "Viewfinder", path: "{checkout}")],',
        "    targets: [",
    ]
    for target in programs:
        manifest.append(
            f'        .executableTarget(name: "{target}", dependencies: [{", ".join(products)}]),')
    manifest.append(
        '        .testTarget(name: "DocSnippets", dependencies: [' + ", ".join(products)
        + ', .product(name: "ViewfinderSimulator", package: "Viewfinder")]),')
    manifest += ["    ],", "    swiftLanguageModes: [.v6]", ")", ""]
    with open(os.path.join(out, "Package.swift"), "w", encoding="utf-8") as f:
        f.write("\n".join(manifest))
    print(f"compiled blocks: {compiled}")
    print(f"skipped blocks: {skipped}")


if __name__ == "__main__":
    main()
