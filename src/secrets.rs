//! Temporary: replaced by the secret filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: &'static str,
    pub start: usize,
    pub end: usize,
}
pub fn scan(_text: &str) -> Vec<Finding> {
    Vec::new()
}
pub fn redact(text: &str) -> String {
    text.to_string()
}
