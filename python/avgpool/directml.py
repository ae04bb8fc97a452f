"""DirectML DML_OPERATOR_AVERAGE_POOLING and AVERAGE_POOLING1.

The descriptor fields map one to one onto :class:`avgpool.AveragePoolingDesc`; DirectML takes
4-D or 5-D tensors, avgpool also 3-D. Inputs are channels first (DirectML's default strides).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, overload

import numpy as np

from ._api import average_pool
from ._desc import AveragePoolingDesc

__all__ = ["average_pooling"]


@overload
def average_pooling(x: np.ndarray, window_size: Sequence[int], strides: Sequence[int],
                    start_padding: Sequence[int], end_padding: Sequence[int],
                    include_padding: bool, dilations: Optional[Sequence[int]] = ...,
                    output_sizes: Optional[Sequence[int]] = ...) -> np.ndarray: ...
@overload
def average_pooling(x: Any, window_size: Sequence[int], strides: Sequence[int],
                    start_padding: Sequence[int], end_padding: Sequence[int],
                    include_padding: bool, dilations: Optional[Sequence[int]] = ...,
                    output_sizes: Optional[Sequence[int]] = ...) -> Any: ...


def average_pooling(x: Any, window_size: Sequence[int], strides: Sequence[int],
                    start_padding: Sequence[int], end_padding: Sequence[int],
                    include_padding: bool, dilations: Optional[Sequence[int]] = None,
                    output_sizes: Optional[Sequence[int]] = None) -> Any:
    """DirectML ``AVERAGE_POOLING`` (``dilations=None``) or ``AVERAGE_POOLING1``.

    Per spatial axis with ``ek = (window_size - 1) * dilation + 1``::

        out = floor((in + start_padding + end_padding - ek) / strides) + 1

    unless ``output_sizes`` (the sizes of DirectML's output tensor) is given; then every window
    must start before the padded end. With ``include_padding`` the padded positions of a window
    count in the divisor; positions past the padded end never do.

    >>> import numpy as np
    >>> from avgpool import directml
    >>> x = np.ones((1, 1, 3, 3), np.float32)
    >>> directml.average_pooling(x, [2, 2], [1, 1], [1, 1], [0, 0], include_padding=True)[0, 0]
    array([[0.25, 0.5 , 0.5 ],
           [0.5 , 1.  , 1.  ],
           [0.5 , 1.  , 1.  ]], dtype=float32)
    """
    desc = AveragePoolingDesc(window_size, strides, start_padding, end_padding, dilations,
                              include_padding=include_padding, output_sizes=output_sizes)
    return average_pool(x, desc)
