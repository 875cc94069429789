//! The size-versus-latency chart of the filter comparison, as SVG: one point per system for
//! absent-key queries with a cold and with a warm cache, labelled with the filter kind.

use std::path::Path;

use plotters::prelude::*;

use super::report::Report;

struct Point {
    label: String,
    mib: f64,
    cold_ms: f64,
    warm_ms: f64,
}

/// Picks one of a point's latencies (a series of the chart).
type Latency = fn(&Point) -> f64;

pub fn write_svg(report: &Report, path: &Path) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    let points: Vec<Point> = report
        .systems
        .iter()
        .map(|s| Point {
            label: format!("{} {}", s.engine, s.filter),
            mib: s.index_bytes as f64 / (1 << 20) as f64,
            cold_ms: s.absent_cold.median_ms,
            warm_ms: s.absent_warm.median_ms,
        })
        .collect();
    let max_x = points.iter().map(|p| p.mib).fold(1.0, f64::max) * 1.25;
    let max_y = points
        .iter()
        .map(|p| p.cold_ms.max(p.warm_ms))
        .fold(1.0, f64::max)
        * 1.15;

    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "t10b, {} rows: index size vs point-query latency (absent keys)",
                report.rows
            ),
            ("sans-serif", 20),
        )
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..max_x, 0.0..max_y)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("index size (MiB, all blocks, c1 + c2)")
        .y_desc("median latency (ms)")
        .draw()
        .map_err(|e| err(&e))?;
    let series: [(&str, RGBColor, Latency); 2] = [
        ("cold cache", RED, |p| p.cold_ms),
        ("warm cache", BLUE, |p| p.warm_ms),
    ];
    for (label, color, latency) in series {
        let series = points.iter().map(|p| {
            EmptyElement::at((p.mib, latency(p)))
                + Circle::new((0, 0), 4, color.filled())
                + Text::new(p.label.clone(), (6, -4), ("sans-serif", 12))
        });
        chart
            .draw_series(series)
            .map_err(|e| err(&e))?
            .label(label)
            .legend(move |(x, y)| Circle::new((x, y), 4, color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}
