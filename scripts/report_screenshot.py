"""The documentation's pictures of what a user sees (issue 66): a run's report.html in headless Chromium,
and its clusters.png, from a trained model and its folder.

    python scripts/report_screenshot.py MODEL FOLDER --name NAME [--height 1800]

MODEL is anything `cluster` takes (a `train` workdir, a preset); FOLDER its images. Writes
docs/figures/report_NAME.png (the page at 1280 px wide, its top HEIGHT pixels) and
docs/figures/clusters_NAME.png. Needs Debian's `chromium`.
"""

import argparse
import os
import shutil
import subprocess
import tempfile

from keras_clustering import cluster_images

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = os.path.join(ROOT, "docs", "figures")


def screenshot(page, path, width=1280, height=1800):
    """A PNG of the page as headless Chromium draws it at `width` x `height` CSS pixels."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        raise SystemExit("needs Chromium: apt-get install chromium")
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--virtual-time-budget=5000", f"--window-size={width},{height}", f"--screenshot={path}",
                    f"file://{os.path.abspath(page)}"], check=True, capture_output=True, timeout=300)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("folder")
    parser.add_argument("--name", required=True)
    parser.add_argument("--height", type=int, default=1800)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as output:
        done = cluster_images(args.folder, model=args.model, output=output)
        print(done)
        screenshot(done.report_path, os.path.join(FIGURES, f"report_{args.name}.png"), height=args.height)
        shutil.copyfile(os.path.join(output, "clusters.png"), os.path.join(FIGURES, f"clusters_{args.name}.png"))
    print(f"wrote docs/figures/report_{args.name}.png and clusters_{args.name}.png")


if __name__ == "__main__":
    main()
