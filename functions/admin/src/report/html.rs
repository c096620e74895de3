//! The HTML report: one self-contained file (inline CSS and SVG, no script,
//! no external host) that reads on screen and prints on A4. German, like the
//! displays: it is read by the care home's quality management and inspectors.

use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, PreEscaped, html};

use nurse_call_core::{
    CallType,
    report::{Answer, Group, Report, Stats},
    wire_time::format_local,
};

use super::Days;
use super::alarm_tables;
use super::chart::{self, ResponseRow};
use super::duration::minutes;
use super::fault_table;
use super::silence_table;

const STYLE: &str = include_str!("report.css");

/// The colour of calls whose type an admin has removed since.
const UNKNOWN_COLOR: &str = "#808080";

pub(super) fn render(report: &Report, call_types: &[CallType], days: &Days) -> String {
    let zone = report.options.zone;
    let threshold = report.options.threshold.num_seconds();
    let color_of = |name: &str| {
        call_types
            .iter()
            .find(|t| t.name == name)
            .map_or(UNKNOWN_COLOR, |t| t.color.as_str())
    };
    let response_rows: Vec<ResponseRow<'_>> = report
        .by_call_type
        .iter()
        .filter_map(|group| {
            Some(ResponseRow {
                label: group.name.as_deref().unwrap_or_default(),
                color: color_of(group.name.as_deref().unwrap_or_default()),
                median_seconds: group.stats.median_seconds?,
                p90_seconds: group.stats.p90_seconds?,
            })
        })
        .collect();
    let title = format!(
        "Qualitätsbericht Rufbearbeitung {} – {}",
        german_date(days.first),
        german_date(days.last)
    );
    let document = html! {
        (DOCTYPE)
        html lang="de" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    h1 { "Qualitätsbericht Rufbearbeitung" }
                    p.period {
                        (german_date(days.first)) " bis " (german_date(days.last))
                        " · Zeitzone " (zone.name())
                        @if let Some(section) = &report.options.section { " · Bereich " strong { (section) } }
                        " · Schwelle " (minutes(threshold))
                    }
                }
                section.figures aria-label="Kennzahlen" {
                    (figure("Rufe", report.total.count.to_string()))
                    (figure("Median Reaktion", optional_minutes(report.total.median_seconds)))
                    (figure("p90 Reaktion", optional_minutes(report.total.p90_seconds)))
                    (figure("längste Reaktion", optional_minutes(report.total.max_seconds)))
                    (figure(&format!("über {}", minutes(threshold)), report.total.over_threshold.to_string()))
                    (figure("ohne Reaktion (offen)", report.total.unanswered.to_string()))
                }
                section {
                    h2 { "Reaktionszeit je Rufart" }
                    @if response_rows.is_empty() {
                        p.empty { "Keine beantworteten Rufe im Zeitraum." }
                    } @else {
                        figure {
                            (chart::responses(&response_rows, threshold))
                            figcaption {
                                "Dunkel: Median, hell: p90 (90 % der Rufe waren schneller oder gleich schnell). "
                                "Gestrichelt: Schwelle " (minutes(threshold)) "."
                            }
                        }
                    }
                    (stats_table("Rufart", &report.by_call_type, threshold))
                }
                section {
                    h2 { "Je Bereich" }
                    (stats_table("Bereich", &report.by_section, threshold))
                }
                (alarm_tables::section(&report.alarms))
                (fault_table::section(&report.faults))
                (silence_table::section(&report.silences, zone))
                section.keep {
                    h2 { "Rufe je Stunde des Tages" }
                    figure {
                        (chart::hours(&report.by_hour))
                        figcaption { "Anzahl der Rufe nach Ortszeit ihres Beginns (" (zone.name()) ")." }
                    }
                }
                section {
                    h2 { "Die langsamsten Rufe" }
                    @if report.slowest.is_empty() {
                        p.empty { "Keine beantworteten Rufe im Zeitraum." }
                    } @else {
                        table {
                            thead { tr {
                                th { "Beginn" } th { "Rufart" } th { "Adresse" } th { "Element" }
                                th { "Bereich" } th.number { "Reaktion" } th { "durch" } th.number { "Dauer" }
                            } }
                            tbody {
                                @for &index in &report.slowest {
                                    @let reported = &report.calls[index];
                                    @let call = &reported.call;
                                    tr {
                                        td { (format_local(call.opened_at, zone)) }
                                        td { (call.event) }
                                        td { (call.address) }
                                        td { (call.element_name) }
                                        td { (call.section.as_deref().unwrap_or("–")) }
                                        td.number { (optional_minutes(reported.response.map(|r| r.num_seconds()))) }
                                        td { (answered_by(reported.answered_by)) }
                                        td.number { (optional_minutes(reported.duration.map(|d| d.num_seconds()))) }
                                    }
                                }
                            }
                        }
                    }
                }
                footer {
                    h2 { "Begriffe" }
                    dl {
                        dt { "Rufe" }
                        dd { "Rufe aller Rufarten außer Anwesenheit und Störungen: Anwesenheiten beantworten Rufe, Störungen melden ein Gerät und stehen in ihrer eigenen Tabelle." }
                        dt { "Reaktionszeit" }
                        dd { "Vom Beginn eines Rufs bis zur ersten Anwesenheit am selben Ort (ab dem Ruf und vor seinem Ende), sonst bis zum Ende des Rufs." }
                        dt { "Dauer" }
                        dd { "Vom Beginn bis zum Ende des Rufs, in echter Zeit (auch über eine Zeitumstellung)." }
                        dt { "Median, p90" }
                        dd { "Rangwert (nearest rank): von n sortierten Zeiten die an Stelle ⌈n/2⌉ bzw. ⌈0,9·n⌉." }
                        dt { "ohne Reaktion" }
                        dd { "Rufe, die noch offen sind und keine Anwesenheit hatten; sie zählen in keinen Zeitwert." }
                        dt { "bis Annahme, Anwesenheit, Ende" }
                        dd { "Vom Beginn bis zum ersten „Ich komme“, bis zur ersten Anwesenheit am selben Ort, bis zum Ende des Rufs: Median / p90 / Maximum (Anzahl der Rufe mit dieser Zeit)." }
                        dt { "Eskalationen" }
                        dd { "Je Stufe ab der zweiten: wie viele Rufe sie erreichten (weil niemand rechtzeitig annahm oder alle ablehnten)." }
                        dt { "Kein Personal" }
                        dd { "Rufe, für die zeitweise niemand erreichbar war (niemand im Dienst, keine Gruppe)." }
                    }
                    p.generated {
                        "Erstellt " (format_local(now(), zone)) " · Zeitraum "
                        (format_local(report.options.period.from, zone)) " bis vor "
                        (format_local(report.options.period.to, zone))
                        ". Ergänzende Auswertung; die Protokolle der Rufanlage nach VDE 0834 bleiben maßgeblich."
                    }
                }
            }
        }
    };
    document.into_string()
}

fn now() -> DateTime<Utc> {
    nurse_call_core::clock::now()
}

fn figure(label: &str, value: String) -> Markup {
    html! {
        div.figure {
            span.value { (value) }
            span.label { (label) }
        }
    }
}

fn stats_table(first_column: &str, groups: &[Group], threshold: i64) -> Markup {
    html! {
        @if groups.is_empty() {
            p.empty { "Keine Rufe im Zeitraum." }
        } @else {
            table {
                thead { tr {
                    th { (first_column) } th.number { "Rufe" } th.number { "Median" } th.number { "p90" }
                    th.number { "Maximum" } th.number { "über " (minutes(threshold)) }
                    th.number { "ohne Reaktion" }
                } }
                tbody {
                    @for group in groups {
                        (stats_row(group.name.as_deref().unwrap_or("ohne Bereich"), &group.stats))
                    }
                }
            }
        }
    }
}

fn stats_row(name: &str, stats: &Stats) -> Markup {
    html! {
        tr {
            td { (name) }
            td.number { (stats.count) }
            td.number { (optional_minutes(stats.median_seconds)) }
            td.number { (optional_minutes(stats.p90_seconds)) }
            td.number { (optional_minutes(stats.max_seconds)) }
            td.number { (stats.over_threshold) }
            td.number { (stats.unanswered) }
        }
    }
}

fn answered_by(answer: Option<Answer>) -> &'static str {
    match answer {
        Some(Answer::Presence) => "Anwesenheit",
        Some(Answer::Close) => "Ende",
        None => "–",
    }
}

fn optional_minutes(seconds: Option<i64>) -> String {
    seconds.map_or_else(|| "–".to_string(), minutes)
}

fn german_date(day: chrono::NaiveDate) -> String {
    day.format("%d.%m.%Y").to_string()
}
