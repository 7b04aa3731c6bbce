#include "metrics/repository_metrics.h"

namespace inferd::metrics {
namespace {

MetricFamily Counter(std::string name, std::string help) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = MetricType::kCounter;
  return f;
}

}  // namespace

std::vector<MetricFamily> RepositoryFamilies(
    const std::map<std::string, RepositoryFetchCounts>& repositories) {
  MetricFamily listings =
      Counter("inferd_repository_listings_total", "Complete listings of a remote model repository");
  MetricFamily objects = Counter("inferd_repository_fetch_objects_total",
                                 "Objects downloaded from a remote model repository");
  MetricFamily bytes = Counter("inferd_repository_fetch_bytes_total",
                               "Bytes downloaded from a remote model repository");
  MetricFamily seconds = Counter("inferd_repository_fetch_duration_seconds_total",
                                 "Time spent downloading from a remote model repository, seconds");
  MetricFamily hits = Counter("inferd_repository_cache_hits_total",
                              "Objects taken from the local model cache instead of downloaded");
  MetricFamily errors = Counter("inferd_repository_fetch_errors_total",
                                "Failed requests to a remote model repository, by kind");
  for (const auto& [repository, c] : repositories) {
    const Labels labels = {{"repository", repository}};
    listings.samples.push_back(Sample{labels, static_cast<double>(c.listings)});
    objects.samples.push_back(Sample{labels, static_cast<double>(c.objects)});
    bytes.samples.push_back(Sample{labels, static_cast<double>(c.bytes)});
    seconds.samples.push_back(Sample{labels, static_cast<double>(c.fetch_us) / 1e6});
    hits.samples.push_back(Sample{labels, static_cast<double>(c.cache_hits)});
    for (const auto& [kind, n] : c.errors) {
      errors.samples.push_back(
          Sample{{{"kind", kind}, {"repository", repository}}, static_cast<double>(n)});
    }
  }
  return {std::move(listings), std::move(objects), std::move(bytes),
          std::move(seconds),  std::move(hits),    std::move(errors)};
}

}  // namespace inferd::metrics
