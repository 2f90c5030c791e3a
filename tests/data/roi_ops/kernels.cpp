// CPU kernels for tests/data/roi_ops/ops.yaml, declared by the generated
// myvision/ops/<op>_native.h headers: torchvision's RoIAlign (bilinear samples
// averaged over each bin), forward and backward, written as a user would.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include <algorithm>
#include <cmath>

#include "myvision/ops/_roi_align_backward_native.h"
#include "myvision/ops/roi_align_native.h"
#include "myvision/ops/shift_rows_native.h"

namespace {

// Calls visit(input_offset, weight) for each input element of channel plane `plane` (H*W) that
// the output element (roi r, bin ph, pw) reads, with the weight it reads it by. Forward sums
// weight * input; backward adds weight * grad to the input's gradient: one loop for both.
template <typename scalar_t, typename Visit>
void for_each_sample(const scalar_t* roi, double spatial_scale, int64_t pooled_height,
                     int64_t pooled_width, int64_t ph, int64_t pw, int64_t height,
                     int64_t width, int64_t sampling_ratio, bool aligned, Visit visit) {
  const double offset = aligned ? 0.5 : 0.0;
  const double start_w = roi[1] * spatial_scale - offset;
  const double start_h = roi[2] * spatial_scale - offset;
  double roi_w = roi[3] * spatial_scale - offset - start_w;
  double roi_h = roi[4] * spatial_scale - offset - start_h;
  if (!aligned) {  // torchvision's legacy behaviour: RoIs at least 1x1
    roi_w = std::max(roi_w, 1.0);
    roi_h = std::max(roi_h, 1.0);
  }
  const double bin_h = roi_h / pooled_height;
  const double bin_w = roi_w / pooled_width;
  const int64_t grid_h = sampling_ratio > 0 ? sampling_ratio : std::ceil(roi_h / pooled_height);
  const int64_t grid_w = sampling_ratio > 0 ? sampling_ratio : std::ceil(roi_w / pooled_width);
  const double count = std::max<int64_t>(grid_h * grid_w, 1);
  for (int64_t iy = 0; iy < grid_h; ++iy) {
    double y = start_h + ph * bin_h + (iy + 0.5) * bin_h / grid_h;
    for (int64_t ix = 0; ix < grid_w; ++ix) {
      double x = start_w + pw * bin_w + (ix + 0.5) * bin_w / grid_w;
      if (y < -1.0 || y > height || x < -1.0 || x > width) continue;
      double yy = std::max(y, 0.0), xx = std::max(x, 0.0);
      int64_t y_low = static_cast<int64_t>(yy), x_low = static_cast<int64_t>(xx);
      int64_t y_high = y_low + 1, x_high = x_low + 1;
      if (y_low >= height - 1) {
        y_high = y_low = height - 1;
        yy = static_cast<double>(y_low);
      }
      if (x_low >= width - 1) {
        x_high = x_low = width - 1;
        xx = static_cast<double>(x_low);
      }
      const double ly = yy - y_low, lx = xx - x_low, hy = 1.0 - ly, hx = 1.0 - lx;
      visit(y_low * width + x_low, hy * hx / count);
      visit(y_low * width + x_high, hy * lx / count);
      visit(y_high * width + x_low, ly * hx / count);
      visit(y_high * width + x_high, ly * lx / count);
    }
  }
}

}  // namespace

namespace at::native {

at::Tensor roi_align_cpu(const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                         int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                         bool aligned) {
  TORCH_CHECK(input.dim() == 4 && rois.dim() == 2 && rois.size(1) == 5,
              "roi_align: input [N, C, H, W] and rois [K, 5]");
  const auto in = input.contiguous();
  const auto boxes = rois.to(in.scalar_type()).contiguous();
  const int64_t channels = in.size(1), height = in.size(2), width = in.size(3);
  auto out = at::zeros({boxes.size(0), channels, pooled_height, pooled_width}, in.options());
  AT_DISPATCH_FLOATING_TYPES(in.scalar_type(), "roi_align_cpu", [&] {
    const scalar_t* x = in.data_ptr<scalar_t>();
    scalar_t* y = out.data_ptr<scalar_t>();
    for (int64_t r = 0; r < boxes.size(0); ++r) {
      const scalar_t* roi = boxes.data_ptr<scalar_t>() + r * 5;
      const int64_t batch = static_cast<int64_t>(roi[0]);
      for (int64_t c = 0; c < channels; ++c) {
        const scalar_t* plane = x + (batch * channels + c) * height * width;
        for (int64_t ph = 0; ph < pooled_height; ++ph) {
          for (int64_t pw = 0; pw < pooled_width; ++pw) {
            double sum = 0;
            for_each_sample(roi, spatial_scale, pooled_height, pooled_width, ph, pw, height, width,
                            sampling_ratio, aligned,
                            [&](int64_t at, double w) { sum += w * plane[at]; });
            y[((r * channels + c) * pooled_height + ph) * pooled_width + pw] = sum;
          }
        }
      }
    }
  });
  return out;
}

at::Tensor roi_align_backward_cpu(const at::Tensor& grad, const at::Tensor& rois,
                                  double spatial_scale, int64_t pooled_height,
                                  int64_t pooled_width, int64_t batch_size, int64_t channels,
                                  int64_t height, int64_t width, int64_t sampling_ratio,
                                  bool aligned) {
  const auto g = grad.contiguous();
  const auto boxes = rois.to(g.scalar_type()).contiguous();
  auto grad_input = at::zeros({batch_size, channels, height, width}, g.options());
  AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "roi_align_backward_cpu", [&] {
    const scalar_t* gy = g.data_ptr<scalar_t>();
    scalar_t* gx = grad_input.data_ptr<scalar_t>();
    for (int64_t r = 0; r < boxes.size(0); ++r) {
      const scalar_t* roi = boxes.data_ptr<scalar_t>() + r * 5;
      const int64_t batch = static_cast<int64_t>(roi[0]);
      for (int64_t c = 0; c < channels; ++c) {
        scalar_t* plane = gx + (batch * channels + c) * height * width;
        for (int64_t ph = 0; ph < pooled_height; ++ph) {
          for (int64_t pw = 0; pw < pooled_width; ++pw) {
            const double up = gy[((r * channels + c) * pooled_height + ph) * pooled_width + pw];
            for_each_sample(roi, spatial_scale, pooled_height, pooled_width, ph, pw, height, width,
                            sampling_ratio, aligned,
                            [&](int64_t at, double w) { plane[at] += w * up; });
          }
        }
      }
    }
  });
  return grad_input;
}

at::Tensor shift_rows_cpu(const at::Tensor& self, int64_t shift) {
  return self.roll(shift, 0);
}

}  // namespace at::native
