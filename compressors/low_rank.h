// What the low-rank compressors (powersgd, rank-k) share: which layers are matrices, the wire
// layout of a factor, and the receiver's reconstruction P Q^T of a matrix layer.
//
// A layer with rows > 1 and cols > 1 is the row-major rows x cols matrix of its elements; any
// other layer (a bias, or a flat shape's single d x 1 layer) is a vector. A factor (rows x r or
// cols x r, computed in double) travels column by column as values of the run's precision T
// (float32 or float64, little-endian); the receiver reads the factors back into double, forms
// P Q^T in double and rounds each element to T once.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <cstring>
#include <span>

#include "core/layers.h"
#include "core/types.h"

namespace lemmalab::low_rank {

inline bool IsMatrix(const Layer& layer) { return layer.rows > 1 && layer.cols > 1; }

// Writes a's entries in storage (column) order as T and returns the position after them.
template <typename T>
std::uint8_t* Put(const Eigen::MatrixXd& a, std::uint8_t* cursor) {
  for (Eigen::Index j = 0; j < a.size(); ++j) {
    const T v = static_cast<T>(a.data()[j]);
    std::memcpy(cursor + j * sizeof(T), &v, sizeof(T));
  }
  return cursor + a.size() * sizeof(T);
}

// Reads a's entries (of a's size) as Put wrote them.
template <typename T>
const std::uint8_t* Get(const std::uint8_t* cursor, Eigen::MatrixXd& a) {
  for (Eigen::Index j = 0; j < a.size(); ++j) {
    T v;
    std::memcpy(&v, cursor + j * sizeof(T), sizeof(T));
    a.data()[j] = v;
  }
  return cursor + a.size() * sizeof(T);
}

// Reads the factors P (rows x rank) and Q (cols x rank) of a matrix layer and writes P Q^T,
// rounded to T, to its row-major elements `values`; returns the position after the factors.
template <typename T>
const std::uint8_t* DecodeFactors(const std::uint8_t* cursor, const Layer& layer, Eigen::Index rank,
                                  T* values) {
  Eigen::MatrixXd p(layer.rows, rank), q(layer.cols, rank);
  cursor = Get<T>(cursor, p);
  cursor = Get<T>(cursor, q);
  Eigen::Map<RowMatrix<T>>(values, layer.rows, layer.cols) = (p * q.transpose()).template cast<T>();
  return cursor;
}

// The message of layers sent per layer as the factors of rank ranks[l] of a matrix layer, or as
// its raw elements where ranks[l] is 0: its size in bytes, and its decoding into the d elements
// `out`.
template <typename T>
std::size_t MessageBytes(std::span<const Layer> layers, std::span<const std::int64_t> ranks) {
  std::size_t bytes = 0;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const Layer& layer = layers[l];
    bytes += sizeof(T) * static_cast<std::size_t>(
                             ranks[l] == 0 ? layer.size() : ranks[l] * (layer.rows + layer.cols));
  }
  return bytes;
}

template <typename T>
void DecodeLayers(const std::uint8_t* cursor, std::span<const Layer> layers,
                  std::span<const std::int64_t> ranks, T* out) {
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const Layer& layer = layers[l];
    T* values = out + layer.offset;
    if (ranks[l] == 0) {
      std::memcpy(values, cursor, static_cast<std::size_t>(layer.size()) * sizeof(T));
      cursor += layer.size() * sizeof(T);
    } else {
      cursor = DecodeFactors<T>(cursor, layer, ranks[l], values);
    }
  }
}

}  // namespace lemmalab::low_rank
