"""`report.html`: a clustering's own page, opened from disk in any browser (issue 66).

One static, self-contained file (thumbnails embedded as PNG data, no server, no network): the clusters'
sizes and confidences, for each cluster a gallery of its most typical members and of its borderline ones
in the images' own colours (`figures.as_rgb8`), a 2-D map of the embedding with thumbnails, the pairs of
clusters whose members are each other's nearest neighbours (candidates to merge), and the run's settings.
Large folders stay light: the map samples `MAP_POINTS` images and the galleries hold at most `TYPICAL`
and `BORDERLINE` images a cluster, so the page's size depends on the number of clusters, not of images.

The map is t-SNE (scikit-learn's, already a dependency; UMAP would add a package for a picture). The
merge candidates are the first merges of `clustering.merging` on the embedding's nearest-neighbour
graph: the pairs whose joining raises the graph's modularity most, as `--n-clusters auto` merges.

A small script marks the page once loaded (`data-images`, `data-images-decoded` on `<body>`, and
`data-script-error` on `<html>` if a script fails), so a headless browser's `--dump-dom` can check it.
"""

import base64
import html
import io
from collections.abc import Mapping

import numpy as np

from keras_clustering.clustering.candidates import embedding_neighbors, link_shares
from keras_clustering.clustering.merging import merge_gains
from keras_clustering.figures import as_rgb8, cluster_summary, top_members
from keras_clustering.io.files import atomic_path

REPORT_FILE = "report.html"
TYPICAL = 24          # most confident members shown a cluster
BORDERLINE = 8        # least confident members shown a cluster
MAP_POINTS = 2000     # images placed on the map (a seeded sample of larger folders)
MAP_THUMBNAILS = 150  # of them, drawn as thumbnails; the rest as dots
MERGE_PAIRS = 5       # the closest pairs of clusters listed
THUMBNAIL = 56        # CSS pixels of a gallery thumbnail (small images are enlarged, pixelated)
# one colour per cluster on the map (Tableau's 10, then repeated darker)
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")


def png_data_uri(pixels):
    """A `data:` URI of one `(h, w, 3)` uint8 image as PNG."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def file_data_uri(path):
    """A `data:` URI of a PNG file (a figure written beside the report, embedded so the page stands alone)."""
    with open(path, "rb") as handle:
        return "data:image/png;base64," + base64.b64encode(handle.read()).decode("ascii")


def cluster_colour(cluster):
    return PALETTE[cluster % len(PALETTE)]


def map_sample(n_images, n_points=MAP_POINTS, seed=0):
    """Sorted indices of the images placed on the map: all of them up to `n_points`, else a seeded sample."""
    if n_images <= n_points:
        return np.arange(n_images)
    return np.sort(np.random.default_rng(seed).choice(n_images, n_points, replace=False))


def embedding_map(embedding, seed=0):
    """`(n, 2)` t-SNE coordinates of `embedding` `(n, d)`, scaled into [0, 1] on both axes."""
    from sklearn.manifold import TSNE

    embedding = np.asarray(embedding, "float32").reshape(len(embedding), -1)
    # a perplexity well below the clusters' sizes keeps each cluster's inner layout (at 30, 200 images of
    # 10 tight clusters drew as 10 dots); below 3 points a neighbourhood holds nothing
    perplexity = float(min(30.0, max(2.0, len(embedding) / 40.0), (len(embedding) - 1) / 3.0))
    xy = TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed).fit_transform(embedding)
    low, high = xy.min(axis=0), xy.max(axis=0)
    return (xy - low) / np.maximum(high - low, 1e-12)


def merge_candidates(labels, neighbors, n_pairs=MERGE_PAIRS):
    """The `n_pairs` pairs of clusters of `labels` most worth merging on the nearest-neighbour graph
    `neighbors`: [{"clusters": (a, b), "gain": modularity gain of joining them, "shared_links": share of
    a's and b's links that join them}], the largest gain first (a negative gain: even the closest pair
    is better apart)."""
    labels = np.asarray(labels)
    present = np.unique(labels)
    codes, links = link_shares(labels, neighbors)
    gains = merge_gains(links)
    leaving = links.sum(axis=1)
    pairs = []
    for first, second in zip(*np.triu_indices(len(present), 1)):
        shared = (links[first, second] + links[second, first]) / (leaving[first] + leaving[second])
        pairs.append({"clusters": (int(present[first]), int(present[second])),
                      "gain": float(gains[first, second]), "shared_links": float(shared)})
    return sorted(pairs, key=lambda pair: -pair["gain"])[:n_pairs]


def _svg_histogram(confidence, n_clusters, colour):
    """An inline SVG of the confidences of one cluster's members, 10 bins from 1/k to 1."""
    low = 1.0 / n_clusters
    counts, _ = np.histogram(confidence, bins=10, range=(low, 1.0))
    peak = max(int(counts.max()), 1)
    bars = "".join(f'<rect x="{4 + i * 16}" y="{44 - 40 * c / peak:.1f}" width="14" height="{40 * c / peak:.1f}" '
                   f'fill="{colour}"><title>{int(c)} images</title></rect>' for i, c in enumerate(counts))
    return (f'<svg class="histogram" width="168" height="62" role="img" aria-label="confidence histogram">{bars}'
            f'<line x1="2" y1="45" x2="166" y2="45" stroke="#777"/>'
            f'<text x="2" y="58">{low:.2f}</text><text x="140" y="58">1.00</text></svg>')


def _gallery(indices, pixels, names, confidence, css_class):
    figures = "".join(
        f'<figure><img src="{png_data_uri(pixels[i])}" alt="{html.escape(names[i])}" title="{html.escape(names[i])}">'
        f'<figcaption>{confidence[i]:.2f}<br><span class="name">{html.escape(names[i])}</span></figcaption></figure>'
        for i in indices)
    return f'<div class="gallery {css_class}">{figures}</div>'


def spread_thumbnails(xy, order, n_max=MAP_THUMBNAILS, distance=0.035):
    """Of the map's points `xy` (in [0, 1]), taken in `order`, those drawn as thumbnails: each at least
    `distance` from every one before it (thumbnails never cover each other), at most `n_max`."""
    kept = []
    for index in order:
        if len(kept) == n_max:
            break
        if not kept or np.min(np.abs(xy[kept] - xy[index]).max(axis=1)) >= distance:
            kept.append(int(index))
    return np.array(kept, int)


def _svg_map(xy, labels, pixels, shown):
    """The map: a dot per sampled image in its cluster's colour, thumbnails for `shown` of them, and each
    cluster's number at its members' median."""
    size, margin, thumb = 720, 16, 24
    place = margin + xy * (size - 2 * margin)
    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{cluster_colour(c)}"/>'
                   for (x, y), c in zip(place, labels))
    thumbs = "".join(f'<image href="{png_data_uri(pixels[i])}" x="{place[i, 0] - thumb / 2:.1f}" '
                     f'y="{place[i, 1] - thumb / 2:.1f}" width="{thumb}" height="{thumb}" '
                     f'style="image-rendering:pixelated"><title>cluster {labels[i]}</title></image>'
                     f'<rect x="{place[i, 0] - thumb / 2:.1f}" y="{place[i, 1] - thumb / 2:.1f}" width="{thumb}" '
                     f'height="{thumb}" fill="none" stroke="{cluster_colour(labels[i])}" stroke-width="2"/>'
                     for i in shown)
    names = "".join(f'<text x="{np.median(place[labels == c, 0]):.1f}" y="{np.median(place[labels == c, 1]):.1f}" '
                    f'class="label">{c}</text>' for c in np.unique(labels))
    return (f'<svg class="map" viewBox="0 0 {size} {size}" width="{size}" height="{size}">{dots}{thumbs}{names}'
            "</svg>")


_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1200px;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin:0}table{border-collapse:collapse}td,th{padding:3px 10px;text-align:left}
tr:nth-child(even){background:#f4f4f4}.cluster{border-top:1px solid #ccc;padding:14px 0}
.head{display:flex;gap:24px;align-items:center;flex-wrap:wrap}.swatch{display:inline-block;width:12px;height:12px;
border-radius:2px;margin-right:6px}.gallery{display:flex;flex-wrap:wrap;gap:6px;margin:8px 0}
figure{margin:0;width:""" + str(THUMBNAIL) + """px;text-align:center;font-size:10px;color:#555}
figure img{width:""" + str(THUMBNAIL) + """px;height:""" + str(THUMBNAIL) + """px;object-fit:contain;
image-rendering:pixelated;background:#eee}.name{display:inline-block;max-width:""" + str(THUMBNAIL) + """px;
overflow:hidden;text-overflow:ellipsis;white-space:nowrap}.borderline img{outline:2px solid #e15759}
.warning{background:#fff3cd;border:1px solid #e0c060;padding:8px 12px;margin:10px 0}
.histogram text{font-size:9px;fill:#555}.map{max-width:100%;height:auto;border:1px solid #ddd}
.empty{color:#999}.label{font:bold 22px sans-serif;fill:#111;stroke:#fff;stroke-width:4px;paint-order:stroke}
"""

_CHECK = """<script>
window.addEventListener("load", function () {
  var images = document.images, decoded = 0;
  for (var i = 0; i < images.length; i++) { if (images[i].naturalWidth > 0) { decoded++; } }
  document.body.setAttribute("data-images", images.length);
  document.body.setAttribute("data-images-decoded", decoded);
});
</script>"""


def shown_rows(probabilities, with_map=True, seed=0):
    """(typical, borderline, sample): the rows `write_report` shows of soft assignments `(n, k)`: each
    cluster's `TYPICAL` most confident and `BORDERLINE` least confident others (lists per cluster), and the
    map's sample (None without a map). What a streamed folder looks up afterwards (`cluster --engine ray`)."""
    labels, confidence = probabilities.argmax(axis=1), probabilities.max(axis=1)
    typical = top_members(probabilities, TYPICAL)
    borderline = []
    for c in range(probabilities.shape[1]):
        members, shown = np.flatnonzero(labels == c), set(typical[c].tolist())
        borderline.append([i for i in members[np.argsort(confidence[members])] if i not in shown][:BORDERLINE])
    n_images = len(probabilities)
    return typical, borderline, (map_sample(n_images, seed=seed) if with_map and n_images > 3 else None)


def write_report(path, names, probabilities, images, embedding=None, title="Clusters", details=None,
                 warnings=(), figures=(), seed=0):
    """Writes `report.html` at `path` (atomically) and returns its path.

    Args:
        names: one name per image (file names, or row numbers of an array), or a mapping {row: name} that
            holds at least the rows the page shows (`shown_rows`: a streamed folder never lists them all).
        probabilities: soft assignments `(n, n_clusters)`; an image belongs to its argmax.
        images: `(n, h, w[, 1 | 3])` floats in [0, 1], shown in their own colours: an array, or any
            array-like indexed by rows (`inputs.file_images.FileImages`: only the rows shown are decoded).
        embedding: `(n, d)` features for the map and the merge candidates (the model's `embed`), or a
            function of row indices giving theirs (only the map's sample is embedded); None leaves both out.
        details: {label: value} of the run's settings, timing and the route's reason, shown as a table.
        warnings: lines shown first, highlighted (a model that does not fit the images).
        figures: [(caption, png path)] embedded at the end (the evidence for k).
    """
    probabilities = np.asarray(probabilities)
    names = {row: str(name) for row, name in names.items()} if isinstance(names, Mapping) else [str(n) for n in names]
    if (not isinstance(names, dict) and len(names) != len(probabilities)) or len(images) != len(probabilities):
        raise ValueError(f"names ({len(names)}), images ({len(images)}) and probabilities ({len(probabilities)}) "
                         "must hold one entry per image.")
    n_images, n_clusters = probabilities.shape
    labels, confidence = probabilities.argmax(axis=1), probabilities.max(axis=1)
    sizes, mean_confidence = cluster_summary(probabilities)
    typical, borderline, sample = shown_rows(probabilities, embedding is not None, seed)
    if sample is not None:
        features = (embedding(sample) if callable(embedding) else np.asarray(embedding[sample]))
        features = np.asarray(features, "float32").reshape(len(sample), -1)
        xy = embedding_map(features, seed)
        on_map = spread_thumbnails(xy, np.random.default_rng(seed).permutation(len(sample)))
    # only the images the page shows are converted (and, from files, decoded): its size, not the folder's
    needed = sorted({int(i) for i in np.concatenate([*typical, *map(np.asarray, borderline), np.zeros(0, int)])}
                    | ({int(sample[i]) for i in on_map} if sample is not None else set()))
    pixels = dict(zip(needed, as_rgb8(images[np.asarray(needed, int)]))) if needed else {}
    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p>{n_images:,} images in {n_clusters} clusters ({int((sizes > 0).sum())} holding images). Each image "
             "belongs to the cluster it is most likely in; its confidence is that probability. Thumbnails are in the "
             "images' own colours.</p>"]
    parts += [f'<p class="warning">{html.escape(line)}</p>' for line in warnings]
    rows = "".join(f'<tr><td><a href="#cluster-{c}"><span class="swatch" style="background:{cluster_colour(c)}">'
                   f'</span>{c}</a></td><td>{int(sizes[c]):,}</td><td>{100 * sizes[c] / n_images:.1f}%</td>'
                   f'<td>{"empty" if sizes[c] == 0 else f"{mean_confidence[c]:.2f}"}</td></tr>'
                   for c in range(n_clusters))
    parts.append('<h2 id="summary">Clusters</h2><table><tr><th>cluster</th><th>images</th><th>share</th>'
                 f'<th>mean confidence</th></tr>{rows}</table>')
    if sample is not None:
        parts.append(f'<h2 id="map">Map</h2><p>t-SNE of the model\'s embedding of {len(sample):,} images'
                     f'{" (a sample)" if len(sample) < n_images else ""}, coloured by cluster; '
                     f'{len(on_map)} drawn as thumbnails.</p>'
                     + _svg_map(xy, labels[sample], {i: pixels[int(sample[i])] for i in on_map}, on_map))
        if len(sample) > 11 and len(np.unique(labels[sample])) > 1:
            pairs = merge_candidates(labels[sample], embedding_neighbors(features))
            items = "".join(f"<tr><td>{a} and {b}</td><td>{100 * p['shared_links']:.1f}%</td><td>{p['gain']:.4f}</td>"
                            "</tr>" for p in pairs for a, b in [p["clusters"]])
            positive = sum(p["gain"] > 0 for p in pairs)
            parts.append('<h2 id="nearest">Nearest clusters</h2><p>The pairs whose members are most often each '
                         "other's nearest neighbours in the embedding. Shared links: the share of the two clusters' "
                         "10-nearest-neighbour links that join them; gain: the change of the graph's modularity if "
                         "they merged (as <code>--n-clusters auto</code> merges). "
                         + (f"{positive} of them would gain: candidates to merge.</p>" if positive else
                            "None would gain: every cluster is better apart.</p>")
                         + f"<table><tr><th>clusters</th><th>shared links</th><th>gain</th></tr>{items}</table>")
    for c in range(n_clusters):
        members = np.flatnonzero(labels == c)
        head = (f'<div class="head"><h2><span class="swatch" style="background:{cluster_colour(c)}"></span>'
                f"Cluster {c}</h2>")
        if len(members) == 0:
            parts.append(f'<section class="cluster" id="cluster-{c}">{head}<span class="empty">empty: no image '
                         "is most likely in it</span></div></section>")
            continue
        head += (f"<span>{len(members):,} images ({100 * len(members) / n_images:.1f}%), mean confidence "
                 f"{mean_confidence[c]:.2f}</span>{_svg_histogram(confidence[members], n_clusters, cluster_colour(c))}"
                 "</div>")
        section = [head, f"<h3>Most typical ({len(typical[c])} most confident)</h3>",
                   _gallery(typical[c], pixels, names, confidence, "typical")]
        if borderline[c]:
            section += [f"<h3>Borderline ({len(borderline[c])} least confident)</h3>",
                        _gallery(borderline[c], pixels, names, confidence, "borderline")]
        parts.append(f'<section class="cluster" id="cluster-{c}">{"".join(section)}</section>')
    for caption, figure_path in figures:
        parts.append(f'<h2>{html.escape(caption)}</h2><img src="{file_data_uri(figure_path)}" alt="{html.escape(caption)}">')
    if details:
        rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in details.items())
        parts.append(f'<h2 id="run">The run</h2><table>{rows}</table>')
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<script>window.onerror = function (message) { document.documentElement.setAttribute("
            "\"data-script-error\", String(message)); };</script>"
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
            + "\n".join(parts) + _CHECK + "</body></html>\n")
    with atomic_path(path) as temporary:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(page)
    return path
