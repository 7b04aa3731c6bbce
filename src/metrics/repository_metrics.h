// The metric families of remote model repositories (s3://), from
// InferenceServer::RepositoryFetches(): label `repository` is the
// repository's URL (never a credential). A server with local repositories
// only has no series, so the families are not written.
//
// Pure function; thread-compatible.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "metrics/exposition.h"
#include "repository/repository_fetch_metrics.h"

namespace inferd::metrics {

std::vector<MetricFamily> RepositoryFamilies(
    const std::map<std::string, RepositoryFetchCounts>& repositories);

}  // namespace inferd::metrics
