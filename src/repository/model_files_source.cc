#include "repository/model_files_source.h"

#include <fstream>
#include <sstream>

namespace inferd {

Status ModelFilesSource::Check(const std::string& model) const {
  if (model == model_) return Status::Ok();
  return NotFound("no model '" + model + "' in the load call's files");
}

StatusOr<ModelListings> ModelFilesSource::ListModels() const {
  ModelListings out;
  out.emplace(model_, ModelListing{files_->path(), ""});
  return out;
}

StatusOr<std::set<int64_t>> ModelFilesSource::ListVersions(const std::string& model) const {
  INFERD_RETURN_IF_ERROR(Check(model));
  return files_->versions();
}

StatusOr<std::string> ModelFilesSource::Fingerprint(const std::string& model) const {
  INFERD_RETURN_IF_ERROR(Check(model));
  return "files:" + files_->path();
}

StatusOr<std::string> ModelFilesSource::ReadFile(const std::string& model,
                                                 const std::string& relative_path) const {
  INFERD_RETURN_IF_ERROR(Check(model));
  // The files hold version directories only (CheckModelFilePath); a path
  // that could climb out is refused as the interface says.
  if (relative_path.empty() || relative_path.front() == '/' ||
      relative_path.find("..") != std::string::npos) {
    return InvalidArgument("invalid file path '" + relative_path + "'");
  }
  std::ifstream in(files_->path() + "/" + relative_path, std::ios::binary);
  if (!in) return NotFound("model '" + model + "' has no file '" + relative_path + "'");
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

StatusOr<std::string> ModelFilesSource::Materialize(const std::string& model,
                                                    const std::set<int64_t>&) {
  INFERD_RETURN_IF_ERROR(Check(model));
  return files_->path();
}

std::vector<std::string> ModelFilesSource::PathsToRedact() const { return {files_->path()}; }

}  // namespace inferd
