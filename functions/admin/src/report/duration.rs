//! How the report writes a duration for people: in the HTML report's figures
//! and tables, and in its charts' labels.

/// `m:ss min` below an hour, `h:mm:ss h` from an hour on.
pub(super) fn minutes(seconds: i64) -> String {
    if seconds < 3600 {
        format!("{}:{:02} min", seconds / 60, seconds % 60)
    } else {
        format!(
            "{}:{:02}:{:02} h",
            seconds / 3600,
            seconds % 3600 / 60,
            seconds % 60
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_minutes_or_hours() {
        assert_eq!(minutes(0), "0:00 min");
        assert_eq!(minutes(270), "4:30 min");
        assert_eq!(minutes(3599), "59:59 min");
        assert_eq!(minutes(3600), "1:00:00 h");
        assert_eq!(minutes(90061), "25:01:01 h");
    }
}
