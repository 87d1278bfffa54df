#include "kubeletplugin/grpc_status.h"

#include "gtest/gtest.h"

namespace canhazgpu::kubeletplugin {
namespace {

TEST(GrpcStatusTest, OkStaysOk) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK, "GetInfo").ok());
}

TEST(GrpcStatusTest, CodesMapToTheSameCode) {
  grpc::Status status = ToGrpcStatus(absl::FailedPreconditionError("gpu 3: reserved"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(status.error_message(), "gpu 3: reserved");

  absl::Status back =
      FromGrpcStatus(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded"),
                     "NodePrepareResources on /x/dra.sock");
  EXPECT_EQ(back.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(back.message(), "NodePrepareResources on /x/dra.sock: Deadline Exceeded");
}

TEST(GrpcStatusTest, MessagesBecomeOneLine) {
  absl::Status status = FromGrpcStatus(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, "failed to connect\nto all addresses\n"),
      "GetInfo");
  EXPECT_EQ(status.message(), "GetInfo: failed to connect to all addresses");
}

TEST(GrpcStatusTest, AnEmptyMessageNamesTheCode) {
  absl::Status status = FromGrpcStatus(grpc::Status(grpc::StatusCode::CANCELLED, ""), "GetInfo");
  EXPECT_EQ(status.message(), "GetInfo: CANCELLED");
}

}  // namespace
}  // namespace canhazgpu::kubeletplugin
