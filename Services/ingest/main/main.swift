import IngestCore
import ServiceKit

// ingest: a stateless worker turning uploaded files into text, chunks, summaries, keywords and
// flashcards; run as many as needed. Configuration from the environment (docs/services/ingest.md).
await ServiceRunner.run(IngestService.self)
