//! The report's charts as inline SVG (no script, no external host), drawn
//! with maud so that every label is escaped. Sizes are in CSS pixels of a
//! fixed view box that scales to the page width, on screen and on A4.

use maud::{Markup, html};

use super::duration::minutes;

/// Calls per local hour of day: 24 columns with a value axis.
pub(super) fn hours(by_hour: &[usize; 24]) -> Markup {
    const WIDTH: f64 = 680.0;
    const HEIGHT: f64 = 220.0;
    const LEFT: f64 = 36.0;
    const BOTTOM: f64 = 28.0;
    const TOP: f64 = 10.0;
    let plot_height = HEIGHT - BOTTOM - TOP;
    let slot = (WIDTH - LEFT) / 24.0;
    let (scale_max, step) = axis(by_hour.iter().copied().max().unwrap_or(0) as f64);
    let y = |value: f64| TOP + plot_height * (1.0 - value / scale_max);
    let ticks = tick_values(scale_max, step);
    html! {
        svg.chart viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) role="img"
            aria-label="Rufe je Stunde des Tages" {
            title { "Rufe je Stunde des Tages" }
            @for tick in &ticks {
                line.grid x1=(LEFT) x2=(WIDTH) y1=(px(y(*tick))) y2=(px(y(*tick))) {}
                text.axis x=(LEFT - 6.0) y=(px(y(*tick) + 4.0)) text-anchor="end" { (tick) }
            }
            @for (hour, count) in by_hour.iter().enumerate() {
                @let x = LEFT + slot * hour as f64;
                @let top = y(*count as f64);
                rect.bar x=(px(x + 2.0)) y=(px(top)) width=(px(slot - 4.0))
                    height=(px(TOP + plot_height - top)) {
                    title { (format!("{hour:02}:00–{hour:02}:59: {count} Rufe")) }
                }
                @if *count > 0 {
                    text.value x=(px(x + slot / 2.0)) y=(px(top - 3.0)) text-anchor="middle" { (count) }
                }
                text.axis x=(px(x + slot / 2.0)) y=(px(HEIGHT - BOTTOM + 16.0)) text-anchor="middle" {
                    (format!("{hour:02}"))
                }
            }
            line.base x1=(LEFT) x2=(WIDTH) y1=(px(TOP + plot_height)) y2=(px(TOP + plot_height)) {}
        }
    }
}

/// One row of the response chart.
pub(super) struct ResponseRow<'a> {
    pub label: &'a str,
    /// `#rrggbb` of the call type.
    pub color: &'a str,
    pub median_seconds: i64,
    pub p90_seconds: i64,
}

/// Median (solid) and p90 (light) response per row, with the threshold as a
/// dashed line; values in minutes.
pub(super) fn responses(rows: &[ResponseRow<'_>], threshold_seconds: i64) -> Markup {
    const WIDTH: f64 = 680.0;
    const LABEL: f64 = 140.0;
    const RIGHT: f64 = 60.0;
    const ROW: f64 = 30.0;
    const TOP: f64 = 8.0;
    const AXIS: f64 = 26.0;
    let height = TOP + ROW * rows.len() as f64 + AXIS;
    let largest = rows
        .iter()
        .map(|r| r.p90_seconds.max(r.median_seconds))
        .max()
        .unwrap_or(0)
        .max(threshold_seconds) as f64
        / 60.0;
    let (scale_max, step) = axis(largest);
    let plot_width = WIDTH - LABEL - RIGHT;
    let x = |minutes: f64| LABEL + plot_width * minutes / scale_max;
    let threshold = threshold_seconds as f64 / 60.0;
    let bottom = TOP + ROW * rows.len() as f64;
    html! {
        svg.chart viewBox=(format!("0 0 {WIDTH} {height}")) role="img"
            aria-label="Reaktionszeit je Rufart: Median und p90" {
            title { "Reaktionszeit je Rufart: Median und p90" }
            @for tick in tick_values(scale_max, step) {
                line.grid x1=(px(x(tick))) x2=(px(x(tick))) y1=(TOP) y2=(px(bottom)) {}
                text.axis x=(px(x(tick))) y=(px(bottom + 16.0)) text-anchor="middle" {
                    (format!("{tick} min"))
                }
            }
            @for (i, row) in rows.iter().enumerate() {
                @let top = TOP + ROW * i as f64;
                @let median = row.median_seconds as f64 / 60.0;
                @let p90 = row.p90_seconds as f64 / 60.0;
                text.label x=(LABEL - 8.0) y=(px(top + ROW / 2.0 + 4.0)) text-anchor="end" { (row.label) }
                rect.p90 x=(LABEL) y=(px(top + 4.0)) width=(px(x(p90) - LABEL)) height=(px(ROW - 8.0))
                    fill=(row.color) {
                    title { (format!("{}: p90 {}", row.label, minutes(row.p90_seconds))) }
                }
                rect.median x=(LABEL) y=(px(top + 9.0)) width=(px(x(median) - LABEL)) height=(px(ROW - 18.0))
                    fill=(row.color) {
                    title { (format!("{}: Median {}", row.label, minutes(row.median_seconds))) }
                }
                text.value x=(px(x(p90) + 4.0)) y=(px(top + ROW / 2.0 + 4.0)) {
                    (minutes(row.p90_seconds))
                }
            }
            line.threshold x1=(px(x(threshold))) x2=(px(x(threshold))) y1=(TOP - 4.0) y2=(px(bottom)) {}
            line.base x1=(LABEL) x2=(LABEL) y1=(TOP) y2=(px(bottom)) {}
        }
    }
}

/// A round axis maximum at or above `largest` and its tick step (1, 2 or 5
/// times a power of ten; about four to five ticks).
fn axis(largest: f64) -> (f64, f64) {
    if largest <= 0.0 {
        return (1.0, 1.0);
    }
    let rough = largest / 4.0;
    let power = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|step| *step >= rough)
        .unwrap_or(10.0 * power);
    // Counts and minutes have whole ticks.
    let step = step.max(1.0);
    ((largest / step).ceil() * step, step)
}

fn tick_values(max: f64, step: f64) -> Vec<f64> {
    let count = (max / step).round() as usize;
    (0..=count).map(|i| i as f64 * step).collect()
}

/// A coordinate with one decimal: short files, no visible rounding.
fn px(value: f64) -> String {
    let rounded = (value * 10.0).round() / 10.0;
    format!("{rounded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_are_round() {
        assert_eq!(axis(0.0), (1.0, 1.0));
        assert_eq!(axis(3.0), (3.0, 1.0));
        assert_eq!(axis(17.0), (20.0, 5.0));
        assert_eq!(axis(60.0), (60.0, 20.0));
    }

    #[test]
    fn the_hour_chart_has_a_bar_per_hour_and_escapes_nothing_it_need_not() {
        let mut by_hour = [0; 24];
        by_hour[10] = 7;
        let svg = hours(&by_hour).into_string();
        assert_eq!(svg.matches("<rect class=\"bar\"").count(), 24);
        assert!(svg.contains("10:00–10:59: 7 Rufe"));
    }

    #[test]
    fn labels_are_escaped() {
        let rows = [ResponseRow {
            label: "<script>x</script>",
            color: "#112233",
            median_seconds: 60,
            p90_seconds: 120,
        }];
        let svg = responses(&rows, 300).into_string();
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;"));
    }
}
